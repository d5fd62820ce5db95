/**
 * Whether a stored event is a provider's registration handshake (Slack's url_verification,
 * Discord's PING, Zoom's url_validation, Twitch's callback verification, Meta's and Dropbox's GET
 * challenges). It is protocol between the provider and switchboard, not something a consumer acts
 * on: forward rules never take one, and `switchboard listen` skips one (ApiReplayHeaders.handshake).
 *
 * Decided by the functions ingest answers handshakes with (verify/handshakes.ts), on what was
 * stored: a GET on a webhook route is stored only when it was the provider's handshake; a POST is
 * one when it passed its check and postHandshake names it, exactly as ingest decided on arrival.
 */
import type { ProviderConfig } from '../config/resolve-config.ts';
import { postHandshake } from '../verify/handshakes.ts';
import { LazyBody } from '../verify/identify.ts';
import type { StoredEvent } from '../store/events/event-store.ts';

export function isHandshakeEvent(
  stored: Pick<StoredEvent, 'payload' | 'headers' | 'passedCheck' | 'request'>,
  provider: ProviderConfig | undefined,
): boolean {
  if (provider?.family !== 'webhook' || provider.preset.handshake === undefined) return false;
  if (stored.request?.method === 'GET') return true;
  if (stored.passedCheck !== true) return false;
  const answer = postHandshake(provider.preset.handshake, new LazyBody(stored.payload), stored.headers, () =>
    provider.secrets.at(0),
  );
  return answer !== null;
}
