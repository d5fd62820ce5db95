import { describeProvider } from './provider-case.ts';
import { telnyxCase } from './telnyx.case.ts';

describeProvider(telnyxCase);
