import { describeProvider } from './provider-case.ts';
import { giteaCase } from './gitea.case.ts';

describeProvider(giteaCase);
