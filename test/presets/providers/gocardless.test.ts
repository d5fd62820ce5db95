import { describeProvider } from './provider-case.ts';
import { gocardlessCase } from './gocardless.case.ts';

describeProvider(gocardlessCase);
