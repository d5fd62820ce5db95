import { describeProvider } from './provider-case.ts';
import { tiktokCase } from './tiktok.case.ts';

describeProvider(tiktokCase);
