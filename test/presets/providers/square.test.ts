import { describeProvider } from './provider-case.ts';
import { squareCase } from './square.case.ts';

describeProvider(squareCase);
