import { describe, expect, it } from 'vitest';
import { failed, refused } from '../../src/outbound/delivery-failure.ts';
import { chooseReplayTarget, replayError } from '../../src/replay/replay-target.ts';
import { expectAppError } from './replay-test-kit.ts';

/* Which target a replay call means, and how the sending path's failures read to its caller. */

describe('chooseReplayTarget: which target', () => {
  it('uses the call target when given, the default otherwise', () => {
    expect(chooseReplayTarget('http://127.0.0.1:3000/a', 'http://localhost:4000/b').href).toBe(
      'http://127.0.0.1:3000/a',
    );
    expect(chooseReplayTarget(undefined, 'http://localhost:4000/b').href).toBe('http://localhost:4000/b');
    expect(chooseReplayTarget('   ', 'http://localhost:4000/b').href).toBe('http://localhost:4000/b');
  });

  it.each([
    [undefined, undefined],
    ['', undefined],
    [undefined, ''],
    ['  ', '  '],
  ])('refuses when neither target (%j) nor default (%j) is set', async (raw, fallback) => {
    const error = await expectAppError(
      (async () => chooseReplayTarget(raw, fallback))(),
      'invalid_argument',
      /^replay target refused: no target_url was given and replay\.default_target is not configured$/,
    );
    expect(error.reason).toBe('bad_target');
  });

  it('validates the default exactly like a call target', async () => {
    const error = await expectAppError(
      (async () => chooseReplayTarget(undefined, 'file:///etc/passwd'))(),
      'invalid_argument',
      /^replay target refused: scheme file: is not http or https$/,
    );
    expect(error.reason).toBe('bad_target');
  });
});

describe('replayError: the sending path in replay’s words', () => {
  it('a refusal is invalid_argument, "replay target refused: …", with the reason', () => {
    const error = replayError(refused('target_not_allowed', '10.0.0.1 is not on outbound.allow'), 'http://10.0.0.1/');
    expect(error).toMatchObject({
      code: 'invalid_argument',
      reason: 'target_not_allowed',
      message: 'replay target refused: 10.0.0.1 is not on outbound.allow',
    });
  });

  it('a transport failure is replay_failed, naming the target without its query string', () => {
    const error = replayError(
      failed('could_not_connect', 'connection refused (ECONNREFUSED)'),
      'http://127.0.0.1:9/hook?token=secret',
    );
    expect(error).toMatchObject({
      code: 'replay_failed',
      reason: 'could_not_connect',
      message: 'replay to http://127.0.0.1:9/hook failed: connection refused (ECONNREFUSED)',
    });
  });
});
