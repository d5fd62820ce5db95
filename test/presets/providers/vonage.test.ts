import { describeProvider } from './provider-case.ts';
import { vonageCase } from './vonage.case.ts';

describeProvider(vonageCase);
