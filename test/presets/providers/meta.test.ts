import { describeProvider } from './provider-case.ts';
import { metaCase } from './meta.case.ts';

describeProvider(metaCase);
