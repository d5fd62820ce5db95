import { describeProvider } from './provider-case.ts';
import { intercomCase } from './intercom.case.ts';

describeProvider(intercomCase);
