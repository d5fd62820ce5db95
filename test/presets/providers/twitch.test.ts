import { describeProvider } from './provider-case.ts';
import { twitchCase } from './twitch.case.ts';

describeProvider(twitchCase);
