import { describeProvider } from './provider-case.ts';
import { paddleCase } from './paddle.case.ts';

describeProvider(paddleCase);
