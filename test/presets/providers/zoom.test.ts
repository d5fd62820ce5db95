import { describeProvider } from './provider-case.ts';
import { zoomCase } from './zoom.case.ts';

describeProvider(zoomCase);
