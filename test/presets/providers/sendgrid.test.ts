import { describeProvider } from './provider-case.ts';
import { sendgridCase } from './sendgrid.case.ts';

describeProvider(sendgridCase);
