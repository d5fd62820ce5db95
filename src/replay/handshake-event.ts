/**
 * Whether a stored event is a provider's registration handshake (Slack's url_verification,
 * Discord's PING, Zoom's url_validation, Twitch's callback verification, Meta's and Dropbox's GET
 * challenges). It is protocol between the provider and switchboard, not something a consumer acts
 * on: forward rules never take one, and `switchboard listen` skips one (ApiReplayHeaders.handshake).
 *
 * The fact is ingest's, recorded when it answered the delivery (StoredEvent.handshake), never
 * worked out again from the provider's current config: with a Zoom secret removed, a stored
 * url_validation would no longer look like one, and listen would forward it.
 */
import { POST_HANDSHAKE_DETAILS } from '../verify/handshakes.ts';
import type { StoredEvent } from '../store/events/event-store.ts';

export function isHandshakeEvent(
  stored: Pick<StoredEvent, 'handshake' | 'request' | 'passedCheck' | 'verifyDetail'>,
): boolean {
  if (stored.handshake !== null) return stored.handshake;
  // Stored before the fact was recorded (migration 0017): what ingest recorded then says it. A
  // GET on a webhook route is stored only as its provider's handshake, and a POST answered as one
  // passed its check and has the answer's detail after its own.
  if (stored.request?.method === 'GET') return true;
  return (
    stored.passedCheck === true && POST_HANDSHAKE_DETAILS.some((detail) => stored.verifyDetail.endsWith(`; ${detail}`))
  );
}
