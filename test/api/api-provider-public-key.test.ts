/**
 * GET /api/providers/{name} says whether switchboard checks a provider with a public key, taken
 * from the provider's resolved config rather than its preset's name: discord and sendgrid always,
 * standard-webhooks only when configured with a whpk_ key. A client (the UI's Providers page)
 * reads it to know no local test event can pass for that provider.
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiProviderDetail } from '../../generated/types.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';
import { configFor } from '../trigger/catalog-configs.ts';

const TOKEN = 'api-provider-public-key-token';

function whpk(): string {
  const { publicKey } = generateKeyPairSync('ed25519');
  return `whpk_${publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64')}`;
}

describe('GET /api/providers/{name}: verifies_with_public_key', () => {
  let composed: ComposedServer;

  beforeAll(async () => {
    const providers = {
      discord: configFor('discord'),
      sendgrid: configFor('sendgrid'),
      'sw-public': { preset: 'standard-webhooks', public_key: whpk() },
      'sw-secret': configFor('standard-webhooks'),
      github: configFor('github'),
      ci: configFor('token'),
      hooks: configFor('open'),
      orders: { family: 'queue', channel: 'orders' },
    };
    // JSON is YAML.
    composed = await startComposedServer({ envToken: TOKEN, config: JSON.stringify({ providers }) });
  }, 60_000);

  afterAll(async () => {
    await composed?.close();
  });

  async function detail(name: string): Promise<ApiProviderDetail> {
    const res = await fetch(`${composed.running.url}/api/providers/${name}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status, name).toBe(200);
    return (await res.json()) as ApiProviderDetail;
  }

  it('is true for a provider checked with a public key, false for every other webhook provider, absent for a queue', async () => {
    const seen = Object.fromEntries(
      await Promise.all(
        ['discord', 'sendgrid', 'sw-public', 'sw-secret', 'github', 'ci', 'hooks', 'orders'].map(
          async (name) => [name, (await detail(name)).verifies_with_public_key] as const,
        ),
      ),
    );
    expect(seen).toEqual({
      discord: true,
      sendgrid: true,
      'sw-public': true,
      'sw-secret': false,
      github: false,
      ci: false,
      hooks: false,
      orders: undefined,
    });
  });

  it('names the credential in ProviderStatus (41.10): a public key is not called a secret', async () => {
    const seen = Object.fromEntries(
      await Promise.all(
        ['discord', 'sendgrid', 'sw-public', 'sw-secret', 'github', 'ci', 'hooks', 'orders'].map(async (name) => {
          const { provider } = await detail(name);
          return [name, [provider.credential, provider.secret_status]] as const;
        }),
      ),
    );
    expect(seen).toEqual({
      discord: ['public_key', 'configured'],
      sendgrid: ['public_key', 'configured'],
      'sw-public': ['public_key', 'configured'],
      'sw-secret': ['secret', 'configured'],
      github: ['secret', 'configured'],
      ci: ['token', 'configured'],
      hooks: ['none', 'none-by-design'],
      orders: ['none', 'none-by-design'],
    });
  });
});
