import { describeProvider } from './provider-case.ts';
import { trelloCase } from './trello.case.ts';

describeProvider(trelloCase);
