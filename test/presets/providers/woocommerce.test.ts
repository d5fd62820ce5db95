import { describeProvider } from './provider-case.ts';
import { woocommerceCase } from './woocommerce.case.ts';

describeProvider(woocommerceCase);
