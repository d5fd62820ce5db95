/**
 * A public key is never an HMAC secret (issue 37.1). Anyone may know a provider's public key, so a
 * delivery "signed" with an HMAC keyed with it proves nothing: on every asymmetric preset (discord,
 * telnyx, sendgrid, and the Standard Webhooks family configured with a public key only, whether
 * written as `whpk_…` or as the bare base64 of its 32 bytes), such a delivery is answered 401 and
 * stored unverified. The same key checks a real Ed25519 signature, so it is read as a public key.
 */
import { createHmac, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createPool, sql, type DatabasePool } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiProviderDetail } from '../../generated/types.ts';
import type { PresetName } from '../../generated/constants.ts';
import { resolveConfig } from '../../src/config/resolve-config.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';
import { ed25519Pair, p256Pair, type PublishedKey } from '../verify/providers/key-pairs.ts';

const TOKEN = 'public-key-confusion-token';
const FAMILY: readonly PresetName[] = ['standard-webhooks', 'svix', 'clerk', 'openai', 'resend', 'replicate', 'polar'];

interface Sender {
  /** The provider's public key as config takes it. */
  publicKey: string;
  /** The bytes an attacker uses as the HMAC key: the public key as it is written, decoded. */
  hmacKey: Buffer;
  /** A delivery carrying `signature(message)` where the scheme puts it. */
  delivery: (body: Buffer, signature: (message: Buffer) => Buffer) => Record<string, string>;
  /** The private half, for the real signature (Ed25519 family members only). */
  privateKey?: KeyObject;
}

const seconds = (): string => String(Math.floor(Date.now() / 1000));

function timestamped(signatureHeader: string, timestampHeader: string, separator: string, encoding: BufferEncoding) {
  return (body: Buffer, signature: (message: Buffer) => Buffer): Record<string, string> => {
    const ts = seconds();
    return {
      [timestampHeader]: ts,
      [signatureHeader]: signature(Buffer.concat([Buffer.from(`${ts}${separator}`), body])).toString(encoding),
    };
  };
}

function standardWebhooks(prefix: string): Sender {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return {
    publicKey: `${prefix}${raw.toString('base64')}`,
    hmacKey: raw,
    privateKey,
    delivery: (body, signature) => {
      const id = `msg_${Math.random().toString(36).slice(2)}`;
      const ts = seconds();
      const message = Buffer.concat([Buffer.from(`${id}.${ts}.`), body]);
      return {
        'webhook-id': id,
        'webhook-timestamp': ts,
        'webhook-signature': `v1,${signature(message).toString('base64')}`,
      };
    },
  };
}

function asymmetric(key: PublishedKey, encoding: 'hex' | 'base64', delivery: Sender['delivery']): Sender {
  return { publicKey: key.text, hmacKey: Buffer.from(key.text, encoding), delivery };
}

const SENDERS: Record<string, { preset: PresetName; sender: Sender }> = {
  discord: {
    preset: 'discord',
    sender: asymmetric(
      ed25519Pair('hex'),
      'hex',
      timestamped('x-signature-ed25519', 'x-signature-timestamp', '', 'hex'),
    ),
  },
  telnyx: {
    preset: 'telnyx',
    sender: asymmetric(
      ed25519Pair('base64'),
      'base64',
      timestamped('telnyx-signature-ed25519', 'telnyx-timestamp', '|', 'base64'),
    ),
  },
  sendgrid: {
    preset: 'sendgrid',
    sender: asymmetric(
      p256Pair(),
      'base64',
      timestamped('x-twilio-email-event-webhook-signature', 'x-twilio-email-event-webhook-timestamp', '', 'base64'),
    ),
  },
  ...Object.fromEntries(
    FAMILY.flatMap((preset) => [
      [`${preset}-raw`, { preset, sender: standardWebhooks('') }],
      [`${preset}-whpk`, { preset, sender: standardWebhooks('whpk_') }],
    ]),
  ),
};

describe('a public key is never used as an HMAC secret', () => {
  let composed: ComposedServer;
  let pool: DatabasePool;

  beforeAll(async () => {
    const providers = Object.fromEntries(
      Object.entries(SENDERS).map(([name, { preset, sender }]) => [name, { preset, public_key: sender.publicKey }]),
    );
    // JSON is YAML.
    composed = await startComposedServer({ envToken: TOKEN, config: JSON.stringify({ providers }) });
    pool = await createPool(composed.databaseUrl, { maximumPoolSize: 1 });
  }, 60_000);

  afterAll(async () => {
    await pool?.end();
    await composed?.close();
  });

  async function post(name: string, body: Buffer, headers: Record<string, string>): Promise<number> {
    const res = await fetch(`${composed.running.url}/hooks/${name}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    await res.arrayBuffer();
    return res.status;
  }

  const storedFor = (name: string, marker: string) =>
    pool.any(sql.unsafe`
      SELECT verified, verify_detail FROM events
      WHERE provider = ${name} AND convert_from(payload, 'UTF8') LIKE ${`%${marker}%`}
    `);

  for (const [name, { sender }] of Object.entries(SENDERS)) {
    it(`${name}: an HMAC keyed with the public key is 401 and stored unverified`, async () => {
      const marker = `forged-${name}`;
      const body = Buffer.from(JSON.stringify({ type: 'invoice.paid', data: { id: marker } }));
      const headers = sender.delivery(body, (message) => createHmac('sha256', sender.hmacKey).update(message).digest());
      expect(await post(name, body, headers)).toBe(401);
      const rows = await storedFor(name, marker);
      expect(rows).toEqual([{ verified: false, verify_detail: expect.any(String) }]);
    });
  }

  for (const name of Object.keys(SENDERS).filter((n) => n.endsWith('-raw') || n.endsWith('-whpk'))) {
    it(`${name}: the same key checks a real Ed25519 (v1a) signature`, async () => {
      const { sender } = SENDERS[name] ?? {};
      const privateKey = sender?.privateKey;
      if (sender === undefined || privateKey === undefined) throw new Error('no key pair');
      const marker = `genuine-${name}`;
      const body = Buffer.from(JSON.stringify({ type: 'invoice.paid', data: { id: marker } }));
      const headers = sender.delivery(body, (message) => sign(null, message, privateKey));
      headers['webhook-signature'] = (headers['webhook-signature'] ?? '').replace(/^v1,/, 'v1a,');
      expect(await post(name, body, headers)).toBe(200);
      expect(await storedFor(name, marker)).toEqual([
        { verified: true, verify_detail: expect.stringMatching(/ed25519/) },
      ]);
    });
  }

  it('/api/providers/<name> says a public key checks it, for every one of them', async () => {
    for (const name of Object.keys(SENDERS)) {
      const res = await fetch(`${composed.running.url}/api/providers/${name}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      const detail = (await res.json()) as ApiProviderDetail;
      expect(detail.verifies_with_public_key, name).toBe(true);
      expect(detail.provider.secret_status, name).toBe('configured');
    }
  });
});

describe('a public_key that is not a public key', () => {
  for (const preset of ['svix', 'clerk', 'discord', 'telnyx', 'sendgrid'] as const) {
    it(`${preset}: is refused at start-up, naming providers.<name>.public_key`, () => {
      // Base64 that decodes (it would make an HMAC key) but is not 32 bytes of Ed25519 or a P-256 key.
      const config = {
        providers: { hooks: { preset, public_key: Buffer.from('a shared secret').toString('base64') } },
      };
      expect(() => resolveConfig(config)).toThrow(/providers\.hooks\.public_key: /);
    });
  }

  it('a whpk_ value given as secret is refused: it is a public key', () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    const whpk = `whpk_${publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64')}`;
    expect(() => resolveConfig({ providers: { hooks: { preset: 'svix', secret: whpk } } })).toThrow(
      /providers\.hooks\.secret: .*public_key/,
    );
  });
});
