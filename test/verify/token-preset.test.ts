import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.ts';
import { createGenericTokenPreset, gitlabPreset } from '../support/presets.ts';
import { BINARY_BODY, expectFail, expectNoLeak, expectOk, input } from './fixtures.ts';

const TOKEN = 'tok_5f1d0c8e2b7a4c3d9e8f7a6b';
const OLD_TOKEN = 'tok_old_0a1b2c3d4e5f';
const BODY = Buffer.from('{"type":"build.finished","id":"b-77"}');

describe('token preset', () => {
  const preset = createGenericTokenPreset();

  it('accepts the token in X-Webhook-Token', () => {
    expect(preset.verify(input(BODY, { 'x-webhook-token': TOKEN }, [TOKEN]))).toEqual({
      ok: true,
      detail: 'token matched (X-Webhook-Token)',
    });
    expect(preset.trustMode).toBe('token');
    expect(preset.sign).toBeUndefined();
  });

  it('accepts Authorization: Bearer <token>, case-insensitively on the scheme', () => {
    expect(preset.verify(input(BODY, { authorization: `Bearer ${TOKEN}` }, [TOKEN]))).toEqual({
      ok: true,
      detail: 'token matched (Authorization: Bearer)',
    });
    expectOk(preset.verify(input(BODY, { authorization: `bearer ${TOKEN}` }, [TOKEN])));
  });

  it('rejects a wrong token, a token with a byte changed, a prefix, and an extension', () => {
    expect(preset.verify(input(BODY, { 'x-webhook-token': 'guess' }, [TOKEN]))).toEqual({
      ok: false,
      reason: 'token_mismatch',
      detail: 'token mismatch (X-Webhook-Token)',
    });
    const flipped = TOKEN.slice(0, -1) + (TOKEN.endsWith('b') ? 'c' : 'b');
    for (const candidate of [flipped, TOKEN.slice(0, -1), `${TOKEN}x`]) {
      expectFail(preset.verify(input(BODY, { 'x-webhook-token': candidate }, [TOKEN])), 'token_mismatch');
    }
    expectFail(preset.verify(input(BODY, { authorization: 'Bearer guess' }, [TOKEN])), 'token_mismatch');
  });

  it('reports a missing token and a non-Bearer Authorization', () => {
    expect(preset.verify(input(BODY, {}, [TOKEN]))).toEqual({
      ok: false,
      reason: 'missing_header',
      detail: 'missing header X-Webhook-Token or Authorization: Bearer',
    });
    expectFail(
      preset.verify(input(BODY, { authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}` }, [TOKEN])),
      'malformed_header',
    );
  });

  it('accepts either token during rotation, and says which matched', () => {
    const tokens = [TOKEN, OLD_TOKEN];
    expect(preset.verify(input(BODY, { 'x-webhook-token': OLD_TOKEN }, tokens))).toEqual({
      ok: true,
      detail: 'token matched (X-Webhook-Token); token 2 of 2',
    });
    expectOk(preset.verify(input(BODY, { 'x-webhook-token': TOKEN }, tokens)));
    expectFail(preset.verify(input(BODY, { 'x-webhook-token': 'third' }, tokens)), 'token_mismatch');
  });

  it('accepts when either the header or the Bearer token is right', () => {
    expectOk(preset.verify(input(BODY, { 'x-webhook-token': 'stale', authorization: `Bearer ${TOKEN}` }, [TOKEN])));
  });

  it('rejects when no token is configured, and never matches an empty token', () => {
    expect(preset.verify(input(BODY, { 'x-webhook-token': TOKEN }, []))).toEqual({
      ok: false,
      reason: 'missing_secret',
      detail: 'no secret configured; delivery rejected',
    });
    expectFail(preset.verify(input(BODY, { 'x-webhook-token': '' }, [''])), 'missing_secret');
  });

  it('uses a configured header', () => {
    const custom = createGenericTokenPreset('X-Relay-Key');
    expect(custom.verify(input(BODY, { 'x-relay-key': TOKEN }, [TOKEN])).detail).toBe('token matched (X-Relay-Key)');
    expect(custom.verify(input(BODY, { 'x-webhook-token': TOKEN }, [TOKEN])).ok).toBe(false);
    expect(custom.requiredHeaders).toEqual([['x-relay-key', 'authorization']]);
    expect(custom.sensitiveHeaders).toEqual(['x-relay-key', 'authorization']);
    expect(() => createGenericTokenPreset('X Relay')).toThrow(AppError);
  });

  it('never puts the token in the detail', () => {
    for (const outcome of [
      preset.verify(input(BODY, { 'x-webhook-token': TOKEN }, [TOKEN, OLD_TOKEN])),
      preset.verify(input(BODY, { 'x-webhook-token': OLD_TOKEN }, [TOKEN])),
      preset.verify(input(BODY, { authorization: `Token ${TOKEN}` }, [TOKEN])),
    ]) {
      expectNoLeak(outcome, [TOKEN, OLD_TOKEN], []);
    }
  });

  it('does not care what the body is', () => {
    expectOk(preset.verify(input(BINARY_BODY, { 'x-webhook-token': TOKEN }, [TOKEN])));
    expect(preset.identify(BINARY_BODY, {})).toEqual({ eventType: 'unknown', externalId: null });
  });

  it('identifies by an event header, else the body type', () => {
    expect(preset.identify(BODY, {})).toEqual({ eventType: 'build.finished', externalId: null });
    expect(preset.identify(BODY, { 'x-event-type': 'deploy' })).toEqual({ eventType: 'deploy', externalId: null });
    expect(preset.identify(Buffer.from('plain text'), {})).toEqual({ eventType: 'unknown', externalId: null });
  });
});

describe('gitlab preset', () => {
  const PUSH = Buffer.from(
    JSON.stringify({ object_kind: 'push', event_name: 'push', ref: 'refs/heads/main', commits: [] }),
  );

  it('accepts the token in X-Gitlab-Token', () => {
    expect(gitlabPreset.verify(input(PUSH, { 'x-gitlab-token': TOKEN }, [TOKEN]))).toEqual({
      ok: true,
      detail: 'token matched (X-Gitlab-Token)',
    });
    expect(gitlabPreset.trustMode).toBe('token');
    expect(gitlabPreset.sensitiveHeaders).toEqual(['x-gitlab-token']);
  });

  it('rejects a wrong token and does not accept a Bearer token instead', () => {
    expectFail(gitlabPreset.verify(input(PUSH, { 'x-gitlab-token': 'nope' }, [TOKEN])), 'token_mismatch');
    expect(gitlabPreset.verify(input(PUSH, { authorization: `Bearer ${TOKEN}` }, [TOKEN]))).toEqual({
      ok: false,
      reason: 'missing_header',
      detail: 'missing header X-Gitlab-Token',
    });
  });

  it('accepts either token during rotation', () => {
    expectOk(gitlabPreset.verify(input(PUSH, { 'x-gitlab-token': OLD_TOKEN }, [TOKEN, OLD_TOKEN])));
    expectOk(gitlabPreset.verify(input(PUSH, { 'x-gitlab-token': TOKEN }, [TOKEN, OLD_TOKEN])));
  });

  it('rejects when no token is configured', () => {
    expectFail(gitlabPreset.verify(input(PUSH, { 'x-gitlab-token': TOKEN }, [])), 'missing_secret');
  });

  it('identifies by object_kind (else X-Gitlab-Event) and Idempotency-Key (else X-Gitlab-Event-UUID)', () => {
    expect(
      gitlabPreset.identify(PUSH, {
        'x-gitlab-event': 'Push Hook',
        'idempotency-key': 'f6b2c1e0',
        'x-gitlab-event-uuid': 'e1',
      }),
    ).toEqual({
      eventType: 'push',
      externalId: 'f6b2c1e0',
    });
    expect(gitlabPreset.identify(BINARY_BODY, { 'x-gitlab-event': 'Push Hook', 'x-gitlab-event-uuid': 'e1' })).toEqual({
      eventType: 'Push Hook',
      externalId: 'e1',
    });
  });
});
