import { describeProvider } from './provider-case.ts';
import { coinbaseCommerceCase } from './coinbase-commerce.case.ts';

describeProvider(coinbaseCommerceCase);
