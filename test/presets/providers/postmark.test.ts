import { describeProvider } from './provider-case.ts';
import { postmarkCase } from './postmark.case.ts';

describeProvider(postmarkCase);
