/**
 * The handshake rules in verify/handshakes.ts beyond the wire test: what is NOT a handshake stays
 * an ordinary delivery, and a challenge is echoed only when it looks like one a provider sends.
 */
import { describe, expect, it } from 'vitest';
import { getHandshake, MAX_CHALLENGE_LENGTH, postHandshake } from '../../src/verify/handshakes.ts';
import { LazyBody } from '../../src/verify/identify.ts';

const body = (value: unknown) => new LazyBody(Buffer.from(JSON.stringify(value)));
const noSecret = () => undefined;

describe('handshakes', () => {
  it('an ordinary delivery of a handshake provider is not a handshake', () => {
    expect(postHandshake('discord-ping', body({ type: 2, data: { name: 'deploy' } }), {}, noSecret)).toBeNull();
    expect(
      postHandshake('discord-ping', body({ type: 1, event: { type: 'APPLICATION_AUTHORIZED' } }), {}, noSecret),
    ).toBeNull();
    expect(
      postHandshake('zoom-url-validation', body({ event: 'meeting.started', payload: {} }), {}, () => 's'),
    ).toBeNull();
    const challenge = body({ challenge: 'abc' });
    expect(
      postHandshake(
        'twitch-callback-verification',
        challenge,
        { 'twitch-eventsub-message-type': 'notification' },
        noSecret,
      ),
    ).toBeNull();
    expect(
      postHandshake('slack-url-verification', body({ type: 'event_callback', challenge: 'x' }), {}, noSecret),
    ).toBeNull();
  });

  it('discord: an interactions PING gets a PONG, a webhook events PING (type 0) gets 204 with no body', () => {
    expect(postHandshake('discord-ping', body({ type: 1, id: '1', application_id: '2' }), {}, noSecret)).toMatchObject({
      eventType: 'ping',
      status: 200,
      body: { json: { type: 1 } },
    });
    expect(
      postHandshake('discord-ping', body({ version: 1, application_id: '2', type: 0 }), {}, noSecret),
    ).toMatchObject({
      eventType: 'ping',
      status: 204,
      body: null,
    });
  });

  it('a zoom validation is answered only with the secret the request verified with', () => {
    const validation = body({ event: 'endpoint.url_validation', payload: { plainToken: 'tok' } });
    expect(postHandshake('zoom-url-validation', validation, {}, noSecret)).toBeNull();
    expect(postHandshake('zoom-url-validation', validation, {}, () => 'secret')).toMatchObject({
      status: 200,
      body: { json: { plainToken: 'tok', encryptedToken: expect.stringMatching(/^[0-9a-f]{64}$/) } },
    });
  });

  it('a challenge that is empty or longer than a provider sends is not echoed', () => {
    const long = 'x'.repeat(MAX_CHALLENGE_LENGTH + 1);
    const headers = { 'twitch-eventsub-message-type': 'webhook_callback_verification' };
    expect(postHandshake('twitch-callback-verification', body({ challenge: long }), headers, noSecret)).toBeNull();
    expect(postHandshake('twitch-callback-verification', body({ challenge: '' }), headers, noSecret)).toBeNull();
    expect(getHandshake('dropbox-challenge', new URLSearchParams({ challenge: long }), undefined)).toMatchObject({
      refused: true,
    });
  });

  it('meta: refused without a configured verify_token, with another token or another mode; a GET without hub.mode is no handshake', () => {
    const query = (token: string, mode = 'subscribe') =>
      new URLSearchParams({ 'hub.mode': mode, 'hub.verify_token': token, 'hub.challenge': '1158201444' });
    expect(getHandshake('meta-subscribe', query('t'), undefined)).toMatchObject({
      refused: true,
      detail: expect.stringContaining('no verify_token'),
    });
    expect(getHandshake('meta-subscribe', query('guess'), 't')).toMatchObject({ refused: true });
    expect(getHandshake('meta-subscribe', query('t', 'unsubscribe'), 't')).toMatchObject({ refused: true });
    expect(getHandshake('meta-subscribe', query('t'), 't')).toMatchObject({
      status: 200,
      body: { text: '1158201444' },
    });
    expect(getHandshake('meta-subscribe', new URLSearchParams({ challenge: 'x' }), 't')).toBeNull();
    expect(getHandshake('zoom-url-validation', new URLSearchParams({ challenge: 'x' }), 't')).toBeNull();
  });
});
