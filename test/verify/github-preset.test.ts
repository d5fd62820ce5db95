/**
 * What is GitHub's own, beyond the catalog table (catalog/github/github.case.ts proves signing, refusals,
 * rotation and replay against @octokit/webhooks-methods): every real example payload, the header's
 * exact form, and how a delivery is named.
 */
import { createHmac } from 'node:crypto';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { describe, expect, it } from 'vitest';
import { BINARY_BODY, expectFail, expectOk, githubDefinitions, githubExample, input, presetOf } from './fixtures.ts';

const SECRET = 'It’s a Secret to Everybody';
const github = presetOf({ preset: 'github' });

async function delivery(payload: unknown, secret = SECRET): Promise<{ body: Buffer; signature: string }> {
  const text = JSON.stringify(payload);
  return { body: Buffer.from(text, 'utf8'), signature: await octokitSign(secret, text) };
}

describe('github preset', () => {
  it('accepts every real GitHub example payload signed by @octokit/webhooks-methods', async () => {
    const definitions = githubDefinitions();
    expect(definitions.length).toBeGreaterThan(40);
    for (const definition of definitions) {
      const { body, signature } = await delivery(definition.examples[0]);
      const outcome = github.verify(input(body, { 'x-hub-signature-256': signature }, [SECRET]));
      expect(outcome, definition.name).toMatchObject({ ok: true });
    }
  });

  it('reports a missing signature header, even when only the legacy SHA-1 header is sent', async () => {
    const { body } = await delivery(githubExample('push'));
    const legacy = `sha1=${createHmac('sha1', SECRET).update(body).digest('hex')}`;
    const outcome = github.verify(input(body, { 'x-hub-signature': legacy }, [SECRET]));
    expect(outcome).toEqual({ ok: false, reason: 'missing_header', detail: 'missing header X-Hub-Signature-256' });
  });

  it('reports a header without the sha256= prefix as malformed', async () => {
    const { body, signature } = await delivery(githubExample('push'));
    const outcome = github.verify(input(body, { 'x-hub-signature-256': signature.slice('sha256='.length) }, [SECRET]));
    expectFail(outcome, 'malformed_header');
  });

  it('accepts upper-case hex and a header bag with non-lower-case names', async () => {
    const { body, signature } = await delivery(githubExample('push'));
    const upper = `sha256=${signature.slice(7).toUpperCase()}`;
    expectOk(github.verify(input(body, { 'X-Hub-Signature-256': upper }, [SECRET])));
  });

  describe('identify', () => {
    it('combines X-GitHub-Event with the body action and uses X-GitHub-Delivery', async () => {
      const { body } = await delivery(githubExample('pull_request', 'opened'));
      const headers = { 'x-github-event': 'pull_request', 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958' };
      expect(github.identify(body, headers)).toEqual({
        eventType: 'pull_request.opened',
        externalId: '72d3162e-cc78-11e3-81ab-4c9367dc0958',
      });
    });

    it('uses the bare event name when the body has no action (push), or is not JSON at all', async () => {
      const { body } = await delivery(githubExample('push'));
      expect(github.identify(body, { 'x-github-event': 'push' })).toEqual({ eventType: 'push', externalId: null });
      expect(github.identify(BINARY_BODY, { 'x-github-event': 'ping' })).toEqual({
        eventType: 'ping',
        externalId: null,
      });
    });

    it('falls back to unknown without the event header', async () => {
      const { body } = await delivery(githubExample('push'));
      expect(github.identify(body, {}).eventType).toBe('unknown');
    });
  });
});
