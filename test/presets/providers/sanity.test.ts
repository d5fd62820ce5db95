import { describeProvider } from './provider-case.ts';
import { sanityCase } from './sanity.case.ts';

describeProvider(sanityCase);
