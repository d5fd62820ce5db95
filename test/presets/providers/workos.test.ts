import { describeProvider } from './provider-case.ts';
import { workosCase } from './workos.case.ts';

describeProvider(workosCase);
