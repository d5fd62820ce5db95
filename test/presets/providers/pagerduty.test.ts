import { describeProvider } from './provider-case.ts';
import { pagerdutyCase } from './pagerduty.case.ts';

describeProvider(pagerdutyCase);
