import { describeProvider } from './provider-case.ts';
import { dropboxCase } from './dropbox.case.ts';

describeProvider(dropboxCase);
