import { describeProvider } from './provider-case.ts';
import { jiraCase } from './jira.case.ts';

describeProvider(jiraCase);
