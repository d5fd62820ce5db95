import { describeProvider } from './provider-case.ts';
import { polarCase } from './polar.case.ts';

describeProvider(polarCase);
