import { describeProvider } from './provider-case.ts';
import { replicateCase } from './replicate.case.ts';

describeProvider(replicateCase);
