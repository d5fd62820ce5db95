import { describeProvider } from './provider-case.ts';
import { lemonSqueezyCase } from './lemon-squeezy.case.ts';

describeProvider(lemonSqueezyCase);
