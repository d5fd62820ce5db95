import { describeProvider } from './provider-case.ts';
import { chargebeeCase } from './chargebee.case.ts';

describeProvider(chargebeeCase);
