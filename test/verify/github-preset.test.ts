import { createHmac } from 'node:crypto';
import { sign as octokitSign, verify as octokitVerify } from '@octokit/webhooks-methods';
import { describe, expect, it } from 'vitest';
import { githubPreset } from '../../src/verify/github-preset.ts';
import {
  BINARY_BODY,
  expectFail,
  expectNoLeak,
  expectOk,
  flipByte,
  githubDefinitions,
  githubExample,
  input,
  NOW_MS,
} from './fixtures.ts';

const SECRET = 'It’s a Secret to Everybody';
const OLD_SECRET = 'previous-github-secret';

async function delivery(payload: unknown, secret = SECRET): Promise<{ body: Buffer; signature: string }> {
  const text = JSON.stringify(payload);
  return { body: Buffer.from(text, 'utf8'), signature: await octokitSign(secret, text) };
}

describe('github preset', () => {
  it('accepts every real GitHub example payload signed by @octokit/webhooks-methods', async () => {
    const definitions = githubDefinitions();
    expect(definitions.length).toBeGreaterThan(40);
    for (const definition of definitions) {
      const example: unknown = definition.examples[0];
      const { body, signature } = await delivery(example);
      const outcome = githubPreset.verify(input(body, { 'x-hub-signature-256': signature }, [SECRET]));
      expect(outcome, definition.name).toEqual({ ok: true, detail: 'hmac-sha256 valid (X-Hub-Signature-256)' });
    }
  });

  it('rejects a wrong secret', async () => {
    const { body, signature } = await delivery(githubExample('push'), 'not-the-secret');
    const outcome = githubPreset.verify(input(body, { 'x-hub-signature-256': signature }, [SECRET]));
    expect(outcome).toEqual({ ok: false, reason: 'bad_signature', detail: 'signature mismatch (X-Hub-Signature-256)' });
  });

  it('rejects a body with one byte flipped', async () => {
    const { body, signature } = await delivery(githubExample('issues', 'opened'));
    const outcome = githubPreset.verify(input(flipByte(body), { 'x-hub-signature-256': signature }, [SECRET]));
    expectFail(outcome, 'bad_signature');
  });

  it('reports a missing signature header, even when only the legacy SHA-1 header is sent', async () => {
    const { body } = await delivery(githubExample('push'));
    const legacy = `sha1=${createHmac('sha1', SECRET).update(body).digest('hex')}`;
    const outcome = githubPreset.verify(input(body, { 'x-hub-signature': legacy }, [SECRET]));
    expect(outcome).toEqual({ ok: false, reason: 'missing_header', detail: 'missing header X-Hub-Signature-256' });
  });

  it('reports a header without the sha256= prefix as malformed', async () => {
    const { body, signature } = await delivery(githubExample('push'));
    const outcome = githubPreset.verify(
      input(body, { 'x-hub-signature-256': signature.slice('sha256='.length) }, [SECRET]),
    );
    expectFail(outcome, 'malformed_header');
  });

  it('accepts a delivery signed with either secret during rotation, and says which matched', async () => {
    const payload = githubExample('pull_request', 'opened');
    const signedNew = await delivery(payload, SECRET);
    const signedOld = await delivery(payload, OLD_SECRET);
    const secrets = [OLD_SECRET, SECRET];
    const viaNew = githubPreset.verify(input(signedNew.body, { 'x-hub-signature-256': signedNew.signature }, secrets));
    const viaOld = githubPreset.verify(input(signedOld.body, { 'x-hub-signature-256': signedOld.signature }, secrets));
    expect(viaNew).toEqual({ ok: true, detail: 'hmac-sha256 valid (X-Hub-Signature-256); secret 2 of 2' });
    expect(viaOld).toEqual({ ok: true, detail: 'hmac-sha256 valid (X-Hub-Signature-256); secret 1 of 2' });
    const neither = await delivery(payload, 'third');
    expectFail(
      githubPreset.verify(input(neither.body, { 'x-hub-signature-256': neither.signature }, secrets)),
      'bad_signature',
    );
  });

  it('rejects everything when no secret is configured, including a list of empty strings', async () => {
    const { body, signature } = await delivery(githubExample('push'));
    const expected = { ok: false, reason: 'missing_secret', detail: 'no secret configured; delivery rejected' };
    expect(githubPreset.verify(input(body, { 'x-hub-signature-256': signature }, []))).toEqual(expected);
    expect(githubPreset.verify(input(body, { 'x-hub-signature-256': signature }, ['']))).toEqual(expected);
  });

  it('accepts upper-case hex and a header bag with non-lower-case names', async () => {
    const { body, signature } = await delivery(githubExample('push'));
    const upper = `sha256=${signature.slice(7).toUpperCase()}`;
    expectOk(githubPreset.verify(input(body, { 'X-Hub-Signature-256': upper }, [SECRET])));
  });

  it('produces headers that @octokit/webhooks-methods verifies', async () => {
    const text = JSON.stringify(githubExample('release', 'published'));
    const headers = githubPreset.sign?.({ body: Buffer.from(text), secret: SECRET, nowMs: NOW_MS });
    expect(Object.keys(headers ?? {})).toEqual(['x-hub-signature-256']);
    expect(await octokitVerify(SECRET, text, headers?.['x-hub-signature-256'] ?? '')).toBe(true);
    expect(await octokitVerify('other', text, headers?.['x-hub-signature-256'] ?? '')).toBe(false);
  });

  it('verifies binary (non-UTF-8) bodies byte for byte', () => {
    const signature = `sha256=${createHmac('sha256', SECRET).update(BINARY_BODY).digest('hex')}`;
    expectOk(githubPreset.verify(input(BINARY_BODY, { 'x-hub-signature-256': signature }, [SECRET])));
    expectFail(
      githubPreset.verify(input(flipByte(BINARY_BODY, 1), { 'x-hub-signature-256': signature }, [SECRET])),
      'bad_signature',
    );
    expect(githubPreset.identify(BINARY_BODY, { 'x-github-event': 'ping' })).toEqual({
      eventType: 'ping',
      externalId: null,
    });
  });

  it('never puts the secret or the signature in the detail', async () => {
    const { body, signature } = await delivery(githubExample('push'));
    const headers = { 'x-hub-signature-256': signature };
    for (const outcome of [
      githubPreset.verify(input(body, headers, [SECRET])),
      githubPreset.verify(input(body, headers, ['wrong-secret-value'])),
      githubPreset.verify(input(flipByte(body), headers, [SECRET])),
    ]) {
      expectNoLeak(outcome, [SECRET, 'wrong-secret-value'], [signature]);
    }
  });

  describe('identify', () => {
    it('combines X-GitHub-Event with the body action and uses X-GitHub-Delivery', async () => {
      const { body } = await delivery(githubExample('pull_request', 'opened'));
      const headers = { 'x-github-event': 'pull_request', 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958' };
      expect(githubPreset.identify(body, headers)).toEqual({
        eventType: 'pull_request.opened',
        externalId: '72d3162e-cc78-11e3-81ab-4c9367dc0958',
      });
    });

    it('uses the bare event name when the body has no action (push)', async () => {
      const { body } = await delivery(githubExample('push'));
      expect(githubPreset.identify(body, { 'x-github-event': 'push' })).toEqual({
        eventType: 'push',
        externalId: null,
      });
    });

    it('falls back to unknown without the event header', async () => {
      const { body } = await delivery(githubExample('push'));
      expect(githubPreset.identify(body, {}).eventType).toBe('unknown');
    });
  });
});
