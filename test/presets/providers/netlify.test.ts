import { describeProvider } from './provider-case.ts';
import { netlifyCase } from './netlify.case.ts';

describeProvider(netlifyCase);
