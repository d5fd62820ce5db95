import { describeProvider } from './provider-case.ts';
import { calendlyCase } from './calendly.case.ts';

describeProvider(calendlyCase);
