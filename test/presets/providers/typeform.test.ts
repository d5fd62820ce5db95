import { describeProvider } from './provider-case.ts';
import { typeformCase } from './typeform.case.ts';

describeProvider(typeformCase);
