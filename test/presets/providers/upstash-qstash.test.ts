import { describeProvider } from './provider-case.ts';
import { upstashQstashCase } from './upstash-qstash.case.ts';

describeProvider(upstashQstashCase);
