import { describeProvider } from './provider-case.ts';
import { zendeskCase } from './zendesk.case.ts';

describeProvider(zendeskCase);
