/**
 * The registration handshakes switchboard answers for its providers (the catalog's `handshake`),
 * so that Zoom, Twitch, Meta, Discord, Dropbox and Slack start sending. A POST handshake is signed
 * like any delivery and is answered only after its check passed; a GET handshake carries no
 * signature (Meta's carries the verify token the operator chose, Dropbox's nothing at all). Ingest
 * stores each answered handshake as an event whose type names it, and forward rules skip it.
 * Pure: no network, no database.
 */
import { createHmac } from 'node:crypto';
import { headerValue } from './headers.ts';
import { isRecord } from './identify.ts';
import type { DeliveryBody, HandshakeKind, HeaderBag } from './preset-types.ts';
import { slackUrlVerificationChallenge } from './hooks/slack.ts';
import { constantTimeEqual } from './timing-safe.ts';

/**
 * A challenge longer than this is not one a provider sends: it is refused rather than echoed.
 * @internal outside src/, only tests or benches use it
 */
export const MAX_CHALLENGE_LENGTH = 1024;

export interface HandshakeAnswer {
  /** The stored event's type, naming the handshake. */
  eventType: string;
  status: number;
  /** The answer's body: JSON, plain text, or nothing (204). */
  body: { json: unknown } | { text: string } | null;
  /** What the stored event's verify_detail says about it. */
  detail: string;
}

/** A GET handshake that is refused (Meta's with the wrong verify token): 403, recorded like a rejected delivery. */
export interface HandshakeRefusal {
  refused: true;
  eventType: string;
  detail: string;
}

/**
 * What a stored POST handshake's verify_detail ends with (after the check's own detail and "; "),
 * one per answer. Rows stored before the fact was recorded (migration 0017) are told by it.
 */
const POST_DETAILS = {
  slack: 'slack url_verification answered',
  discordInteractions: 'discord interactions PING answered',
  discordEvents: 'discord webhook events PING answered',
  zoom: 'zoom endpoint.url_validation answered',
  twitch: 'twitch webhook_callback_verification answered',
} as const;

export const POST_HANDSHAKE_DETAILS: readonly string[] = Object.values(POST_DETAILS);

const usableChallenge = (value: unknown): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= MAX_CHALLENGE_LENGTH;

/**
 * A signed POST that passed its check: the handshake answer, or null when it is an ordinary
 * delivery. `verifyingSecret` gives the configured secret this request verified with (Zoom's
 * answer is an HMAC with it), looked for only when needed.
 */
export function postHandshake(
  kind: HandshakeKind,
  body: DeliveryBody,
  headers: HeaderBag,
  verifyingSecret: () => string | undefined,
): HandshakeAnswer | null {
  const json = body.json;
  switch (kind) {
    case 'slack-url-verification': {
      const challenge = slackUrlVerificationChallenge(body.bytes, headers);
      if (challenge === null || challenge.length > MAX_CHALLENGE_LENGTH) return null;
      return {
        eventType: 'url_verification',
        status: 200,
        body: { json: { challenge } },
        detail: POST_DETAILS.slack,
      };
    }
    case 'discord-ping': {
      if (!isRecord(json)) return null;
      // Interactions: PING is type 1, answered with a PONG ({"type":1}).
      if (json['type'] === 1 && !('event' in json)) {
        return {
          eventType: 'ping',
          status: 200,
          body: { json: { type: 1 } },
          detail: POST_DETAILS.discordInteractions,
        };
      }
      // Webhook events: PING is type 0 (its payload has no event), answered 204 with no body.
      if (json['type'] === 0 && 'version' in json && !('event' in json)) {
        return { eventType: 'ping', status: 204, body: null, detail: POST_DETAILS.discordEvents };
      }
      return null;
    }
    case 'zoom-url-validation': {
      if (!isRecord(json) || json['event'] !== 'endpoint.url_validation' || !isRecord(json['payload'])) return null;
      const plainToken = json['payload']['plainToken'];
      const secret = verifyingSecret();
      if (!usableChallenge(plainToken) || secret === undefined) return null;
      const encryptedToken = createHmac('sha256', secret).update(plainToken).digest('hex');
      return {
        eventType: 'endpoint.url_validation',
        status: 200,
        body: { json: { plainToken, encryptedToken } },
        detail: POST_DETAILS.zoom,
      };
    }
    case 'twitch-callback-verification': {
      if (headerValue(headers, 'twitch-eventsub-message-type') !== 'webhook_callback_verification') return null;
      const challenge = isRecord(json) ? json['challenge'] : undefined;
      if (!usableChallenge(challenge)) return null;
      return {
        eventType: 'webhook_callback_verification',
        status: 200,
        body: { text: challenge },
        detail: POST_DETAILS.twitch,
      };
    }
    case 'meta-subscribe':
    case 'dropbox-challenge':
      return null;
  }
}

/**
 * A GET on a provider's route: its handshake's answer, a refusal (403), or null when the GET is not
 * this provider's handshake (405, as every other GET). Neither GET is signed, so the stored event
 * never counts as having passed a check (replay attaches nothing to it).
 */
export function getHandshake(
  kind: HandshakeKind,
  query: URLSearchParams,
  verifyToken: string | undefined,
): HandshakeAnswer | HandshakeRefusal | null {
  if (kind === 'meta-subscribe') {
    const mode = query.get('hub.mode');
    if (mode === null) return null;
    const token = query.get('hub.verify_token');
    const challenge = query.get('hub.challenge');
    if (mode !== 'subscribe' || !usableChallenge(challenge)) {
      return {
        refused: true,
        eventType: 'hub.subscribe',
        detail: 'meta subscribe handshake malformed (hub.mode, hub.challenge)',
      };
    }
    if (verifyToken === undefined || token === null || !constantTimeEqual(token, verifyToken)) {
      const why = verifyToken === undefined ? 'no verify_token configured' : 'hub.verify_token does not match';
      return { refused: true, eventType: 'hub.subscribe', detail: `meta subscribe handshake refused: ${why}` };
    }
    return {
      eventType: 'hub.subscribe',
      status: 200,
      body: { text: challenge },
      detail: 'meta subscribe handshake answered: hub.verify_token matched (a GET carries no signature)',
    };
  }
  if (kind === 'dropbox-challenge') {
    const challenge = query.get('challenge');
    if (challenge === null) return null;
    if (!usableChallenge(challenge)) {
      return { refused: true, eventType: 'challenge', detail: 'dropbox challenge malformed' };
    }
    return {
      eventType: 'challenge',
      status: 200,
      body: { text: challenge },
      detail: 'dropbox challenge answered (an unauthenticated GET)',
    };
  }
  return null;
}
