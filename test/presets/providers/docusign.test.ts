import { describeProvider } from './provider-case.ts';
import { docusignCase } from './docusign.case.ts';

describeProvider(docusignCase);
