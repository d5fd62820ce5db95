import { describeProvider } from './provider-case.ts';
import { discordCase } from './discord.case.ts';

describeProvider(discordCase);
