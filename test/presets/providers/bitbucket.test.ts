import { describeProvider } from './provider-case.ts';
import { bitbucketCase } from './bitbucket.case.ts';

describeProvider(bitbucketCase);
