import { describeProvider } from './provider-case.ts';
import { boxCase } from './box.case.ts';

describeProvider(boxCase);
