import { describeProvider } from './provider-case.ts';
import { circleciCase } from './circleci.case.ts';

describeProvider(circleciCase);
