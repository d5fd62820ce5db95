import { describeProvider } from './provider-case.ts';
import { razorpayCase } from './razorpay.case.ts';

describeProvider(razorpayCase);
