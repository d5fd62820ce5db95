import { describeProvider } from './provider-case.ts';
import { vercelCase } from './vercel.case.ts';

describeProvider(vercelCase);
