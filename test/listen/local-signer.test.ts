/**
 * listen, given a signing secret, signs with what GET /api/providers/{name} says about a provider,
 * and the secret means what it means as that provider's `secret` (or `token`) in switchboard.yaml: the
 * server's own preset, configured with the same secret, accepts every signature, and so does the
 * Standard Webhooks library.
 */
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { validateApiProviderDetail } from '../../generated/validators.js';
import type { ApiReplayHeaders } from '../../generated/types.ts';
import { credentialsFor, signingFor } from '../../src/listen/local-signer.ts';
import { createProviderDirectory } from '../../src/provider-directory/provider-directory.ts';
import { providersFrom, webhookProvider } from '../support/providers.ts';

const SECRET = 'whsec_bGFwdG9wLXNpZGUtZGV2LXNlY3JldA==';

const providers = providersFrom({
  github: { preset: 'github', secret: SECRET },
  stripe: { preset: 'stripe', secret: SECRET },
  slack: { preset: 'slack', secret: SECRET },
  shopify: { preset: 'shopify', secret: SECRET },
  linear: { preset: 'linear', secret: SECRET },
  sw: { preset: 'standard-webhooks', secret: SECRET },
  custom: {
    preset: 'generic-hmac',
    secret: SECRET,
    hmac: { header: 'X-Custom-Sig', algorithm: 'sha512', encoding: 'base64', prefix: 'v1=' },
  },
  ci: { trust_mode: 'token', token: SECRET, token_header: 'X-Deploy-Token' },
  gitlab: { preset: 'gitlab', token: SECRET },
  sandbox: { trust_mode: 'open' },
});
const directory = createProviderDirectory(providers, () => 'connected');

/** The detail as a client gets it: JSON over the wire, checked by the contract's validator. */
function detailOverTheWire(name: string) {
  const wire: unknown = JSON.parse(JSON.stringify(directory.detail(name)));
  if (!validateApiProviderDetail(wire)) throw new Error(`detail of ${name} is off the contract`);
  return wire;
}

const body = Buffer.from('{"type":"invoice.paid","id":"evt_1","data":{"n":1}}');

function event(name: string, passed: boolean | null, headers: Record<string, string> = {}): ApiReplayHeaders {
  const provider = webhookProvider(providers, name);
  return {
    id: '0193f0c4-5a6e-7b8c-9d0e-1f2a3b4c5d6e',
    provider: name,
    trust_mode: provider.trustMode,
    passed_check: passed,
    handshake: false,
    headers,
  };
}

describe('listen: signing on the laptop', () => {
  for (const name of ['github', 'stripe', 'slack', 'shopify', 'linear', 'sw', 'custom', 'ci', 'gitlab']) {
    it(`${name}: the server's own preset, with the same secret, accepts the signature`, () => {
      const signing = signingFor(detailOverTheWire(name));
      expect(signing.kind).not.toBe('none');
      const stored: Record<string, string> = name === 'sw' ? { 'webhook-id': 'msg_1' } : {};
      const nowMs = Date.now();
      // Linear's timestamp is in the body, which is signed as it was stored.
      const bytes = name === 'linear' ? Buffer.from(`{"type":"Issue","webhookTimestamp":${nowMs}}`) : body;
      const { headers } = credentialsFor({
        signing,
        event: event(name, true, stored),
        body: bytes,
        secret: SECRET,
        nowMs,
      });
      expect(Object.keys(headers).length).toBeGreaterThan(0);
      const sent = Object.fromEntries(Object.entries({ ...stored, ...headers }).map(([k, v]) => [k.toLowerCase(), v]));
      const outcome = webhookProvider(providers, name).preset.verify({
        body: bytes,
        headers: sent,
        secrets: [SECRET],
        publicKeys: [],
        toleranceSeconds: 300,
        nowMs,
      });
      expect(outcome).toMatchObject({ ok: true });
      if (name === 'sw') expect(new Webhook(SECRET).verify(bytes.toString(), sent)).toBeTruthy();
    });
  }

  it('signs nothing that failed its check, and nothing of an open provider', () => {
    const github = signingFor(detailOverTheWire('github'));
    expect(credentialsFor({ signing: github, event: event('github', false), body, secret: SECRET, nowMs: 0 })).toEqual({
      headers: {},
      reason: 'it did not pass its check on arrival',
    });
    expect(signingFor(detailOverTheWire('sandbox')).kind).toBe('none');
  });
});
