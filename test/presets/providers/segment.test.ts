import { describeProvider } from './provider-case.ts';
import { segmentCase } from './segment.case.ts';

describeProvider(segmentCase);
