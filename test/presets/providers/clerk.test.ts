import { describeProvider } from './provider-case.ts';
import { clerkCase } from './clerk.case.ts';

describeProvider(clerkCase);
