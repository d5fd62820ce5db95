import { describeProvider } from './provider-case.ts';
import { calComCase } from './cal-com.case.ts';

describeProvider(calComCase);
