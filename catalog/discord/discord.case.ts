/**
 * Discord: `X-Signature-Ed25519` (hex) over `{X-Signature-Timestamp}{body}`, checked with the
 * application's public key (hex). discord-interactions only verifies (verifyKey), so deliveries are
 * signed here with a node:crypto key, which verifyKey is shown to accept.
 * https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers
 */
import { verifyKey } from 'discord-interactions';
import { ed25519Pair, signTimestamped } from '../../test/verify/providers/key-pairs.ts';
import { jsonDelivery, type ProviderCase, type Signed } from '../../test/verify/providers/provider-case.ts';

const current = ed25519Pair('hex');
const other = ed25519Pair('hex');

/** A signed interaction: an application command, as Discord posts it. */
export function discordDelivery(publicKey: string, atMs: number, payload?: object): Signed {
  const body = Buffer.from(
    JSON.stringify(
      payload ?? {
        id: `${BigInt(atMs) << 22n}`,
        application_id: '1187290427837456384',
        type: 2,
        guild_id: '613425648685547541',
        data: { id: '1187301136418848798', name: 'deploy', type: 1 },
        member: { user: { id: '53908232506183680', username: 'mason' } },
        token: 'aW50ZXJhY3Rpb246MTE4NzI5',
        version: 1,
      },
    ),
  );
  const { timestamp, signature } = signTimestamped(publicKey, atMs, body);
  return jsonDelivery(body, {
    'x-signature-ed25519': signature.toString('hex'),
    'x-signature-timestamp': timestamp,
    'user-agent': 'Discord-Interactions/1.0 (+https://discord.com)',
  });
}

export const discordCase: ProviderCase = {
  preset: 'discord',
  credential: 'public_key',
  secret: current.text,
  wrongSecret: other.text,
  deliver: (publicKey, atMs) => discordDelivery(publicKey, atMs),
  accepts: ({ body, headers }, publicKey) =>
    verifyKey(body, headers['x-signature-ed25519'] ?? '', headers['x-signature-timestamp'] ?? '', publicKey),
  timestamped: true,
  requiredHeader: 'X-Signature-Ed25519',
  eventType: 'command.deploy',
  proof: 'package-verifies',
};
