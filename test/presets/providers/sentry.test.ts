import { describeProvider } from './provider-case.ts';
import { sentryCase } from './sentry.case.ts';

describeProvider(sentryCase);
