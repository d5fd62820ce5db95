import { describeProvider } from './provider-case.ts';
import { resendCase } from './resend.case.ts';

describeProvider(resendCase);
