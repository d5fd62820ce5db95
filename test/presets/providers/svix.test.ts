import { describeProvider } from './provider-case.ts';
import { svixCase } from './svix.case.ts';

describeProvider(svixCase);
