import { describeProvider } from './provider-case.ts';
import { muxCase } from './mux.case.ts';

describeProvider(muxCase);
