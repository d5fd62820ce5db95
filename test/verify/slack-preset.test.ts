/**
 * What is Slack's own, beyond the catalog table (catalog/slack/slack.case.ts proves signing, refusals,
 * staleness, rotation and replay against @slack/bolt): Slack's published example, its two headers'
 * grammar, how its envelopes are named, and the url_verification challenge.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { slackUrlVerificationChallenge } from '../../src/verify/hooks/slack.ts';
import { BINARY_BODY, expectFail, expectOk, input, NOW_S, presetOf } from './fixtures.ts';

const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const slackPreset = presetOf({ preset: 'slack' });

const EVENT_CALLBACK = Buffer.from(
  JSON.stringify({
    token: 'XXYYZZ',
    team_id: 'T123ABC456',
    api_app_id: 'A123ABC456',
    event: {
      type: 'app_mention',
      user: 'U123ABC456',
      text: '<@U0LAN0Z89> is it everything?',
      ts: '1515449522.000016',
      channel: 'C123ABC456',
    },
    type: 'event_callback',
    event_id: 'Ev123ABC456',
    event_time: 1515449522000016,
  }),
);

/** Built from Slack's documented scheme, independently of the preset's own sign(). */
function slackHeaders(body: Buffer, secret = SECRET, timestamp = NOW_S): Record<string, string> {
  const digest = createHmac('sha256', secret).update(`v0:${timestamp}:`).update(body).digest('hex');
  return { 'x-slack-signature': `v0=${digest}`, 'x-slack-request-timestamp': String(timestamp) };
}

describe('slack preset', () => {
  it('matches Slack’s documented example basestring', () => {
    // From Slack's "Verifying requests" guide: a slash-command body, timestamp and signing secret.
    const body = Buffer.from(
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
    );
    const headers = {
      'x-slack-request-timestamp': '1531420618',
      'x-slack-signature': 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
    };
    const outcome = slackPreset.verify(
      input(body, headers, ['8f742231b10e8888abcd99yyyzzz85a5'], { nowMs: 1531420618_000 }),
    );
    expectOk(outcome);
    expect(slackPreset.identify(body, headers)).toEqual({
      eventType: 'slash_command',
      externalId: '398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
    });
  });

  it('names the header of a stale timestamp, and refuses one swapped in after signing as forged', () => {
    const old = slackPreset.verify(input(EVENT_CALLBACK, slackHeaders(EVENT_CALLBACK, SECRET, NOW_S - 301), [SECRET]));
    expect(old.detail).toBe('timestamp outside 300 s tolerance (X-Slack-Request-Timestamp 301 s old)');
    const headers = {
      ...slackHeaders(EVENT_CALLBACK, SECRET, NOW_S - 1000),
      'x-slack-request-timestamp': String(NOW_S),
    };
    expectFail(slackPreset.verify(input(EVENT_CALLBACK, headers, [SECRET])), 'bad_signature');
  });

  it('reports each missing header and malformed values', () => {
    const { 'x-slack-signature': signature, 'x-slack-request-timestamp': timestamp } = slackHeaders(EVENT_CALLBACK);
    expect(slackPreset.verify(input(EVENT_CALLBACK, { 'x-slack-request-timestamp': timestamp }, [SECRET])).detail).toBe(
      'missing header X-Slack-Signature',
    );
    const noTimestamp = slackPreset.verify(input(EVENT_CALLBACK, { 'x-slack-signature': signature }, [SECRET]));
    expect(noTimestamp).toEqual({
      ok: false,
      reason: 'missing_header',
      detail: 'missing header X-Slack-Request-Timestamp',
    });
    const badTs = { 'x-slack-signature': signature, 'x-slack-request-timestamp': '1e9' };
    expectFail(slackPreset.verify(input(EVENT_CALLBACK, badTs, [SECRET])), 'malformed_header');
    const noPrefix = { 'x-slack-signature': (signature ?? '').slice(3), 'x-slack-request-timestamp': timestamp };
    expectFail(slackPreset.verify(input(EVENT_CALLBACK, noPrefix, [SECRET])), 'malformed_header');
  });

  describe('identify', () => {
    it('names an event_callback by its inner event type and uses event_id', () => {
      expect(slackPreset.identify(EVENT_CALLBACK, {})).toEqual({ eventType: 'app_mention', externalId: 'Ev123ABC456' });
    });

    it('names other envelopes by the top-level type', () => {
      const body = Buffer.from(
        '{"token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}',
      );
      expect(slackPreset.identify(body, {})).toEqual({ eventType: 'url_verification', externalId: null });
    });

    it('reads interactivity payloads from form-encoded bodies', () => {
      const payload = JSON.stringify({ type: 'block_actions', user: { id: 'U1' }, actions: [] });
      const body = Buffer.from(new URLSearchParams({ payload }).toString());
      expect(slackPreset.identify(body, {})).toEqual({ eventType: 'block_actions', externalId: null });
    });
  });

  describe('url_verification challenge', () => {
    it('returns the challenge of a url_verification body', () => {
      const body = Buffer.from(
        '{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}',
      );
      expect(slackUrlVerificationChallenge(body, {})).toBe('3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P');
    });

    it('returns null for anything else', () => {
      expect(slackUrlVerificationChallenge(EVENT_CALLBACK, {})).toBeNull();
      expect(slackUrlVerificationChallenge(Buffer.from('{"type":"url_verification"}'), {})).toBeNull();
      expect(slackUrlVerificationChallenge(Buffer.from('{"type":"url_verification","challenge":42}'), {})).toBeNull();
      expect(slackUrlVerificationChallenge(BINARY_BODY, {})).toBeNull();
    });
  });
});
