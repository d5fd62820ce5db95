/**
 * Apps that answer providers through switchboard, for the reply tests (a forward rule's target or
 * the app behind `listen --reply`): each checks the request with the provider's own package first.
 */
import type { ServerResponse } from 'node:http';
import { InteractionResponseType, verifyKey } from 'discord-interactions';
import { discordCase } from '../../catalog/discord/discord.case.ts';
import type { RecordedRequest } from './local-server.ts';

/** One header of a recorded request, as a string ('' when absent). */
export const header = (req: RecordedRequest, name: string): string => {
  const value = req.headers[name];
  return String((Array.isArray(value) ? value[0] : value) ?? '');
};

/**
 * A Discord bot: verifyKey on the request it gets, then CHANNEL_MESSAGE_WITH_SOURCE whose content
 * `content` makes from the command's name, after `delayMs`. It also sets a cookie, which must never
 * reach the provider.
 */
export function discordBot(
  content: (command: string) => string,
  delayMs = 0,
): (req: RecordedRequest, res: ServerResponse) => void {
  return (req, res) => {
    void (async () => {
      const valid = await verifyKey(
        req.body,
        header(req, 'x-signature-ed25519'),
        header(req, 'x-signature-timestamp'),
        discordCase.secret,
      );
      if (!valid) {
        res.statusCode = 401;
        res.end('invalid request signature');
        return;
      }
      const interaction = JSON.parse(req.body.toString('utf8')) as { data: { name: string } };
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      res.setHeader('content-type', 'application/json');
      res.setHeader('set-cookie', 'session=app-only');
      res.end(
        JSON.stringify({
          type: InteractionResponseType.CHANNEL_MESSAGE_WITH_SOURCE,
          data: { content: content(interaction.data.name) },
        }),
      );
    })();
  };
}
