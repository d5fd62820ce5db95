import { describeProvider } from './provider-case.ts';
import { notionCase } from './notion.case.ts';

describeProvider(notionCase);
