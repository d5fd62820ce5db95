import { describeProvider } from './provider-case.ts';
import { hubspotCase } from './hubspot.case.ts';

describeProvider(hubspotCase);
