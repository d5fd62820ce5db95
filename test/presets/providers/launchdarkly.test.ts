import { describeProvider } from './provider-case.ts';
import { launchdarklyCase } from './launchdarkly.case.ts';

describeProvider(launchdarklyCase);
