import { describeProvider } from './provider-case.ts';
import { openaiCase } from './openai.case.ts';

describeProvider(openaiCase);
