import type { ApiReplayHeaders } from '../../generated/types.ts';
import type { ProviderConfig } from '../config/resolve-config.ts';
import { deliveryCredentials, originalQueryOf, secretHeadersOf } from '../outbound/credentials.ts';
import { assembleDeliveryHeaders, deliveryHeaderSelection, selectStoredHeaders } from '../outbound/outgoing-headers.ts';
import type { StoredEvent } from '../store/events/event-store.ts';
import { isHandshakeEvent } from './handshake-event.ts';

/**
 * What a replay of a stored event sends before its credentials, for a caller that replays it
 * itself (the UI's copy-as-curl, `switchboard listen`): the caller signs with its own secret, if
 * at all. The same header selection and assembly replay and forwarding use.
 */
export function replayHeadersOf(
  stored: StoredEvent,
  provider: ProviderConfig | undefined,
  nowMs: number,
): ApiReplayHeaders {
  const selection = deliveryHeaderSelection(provider, secretHeadersOf(provider));
  const copied = selectStoredHeaders(stored.headers, selection);
  // An asymmetric scheme's original signature travels with an event that passed its check: it
  // is the sender's public proof, which the caller could not make itself (deliveryCredentials
  // decides, with the same rules as replay and forwarding; a symmetric signature never comes here).
  const credentials = deliveryCredentials(provider, {
    body: stored.payload,
    storedHeaders: stored.headers,
    nowMs,
    arrival: stored,
  });
  const query = originalQueryOf(provider, stored);
  return {
    id: stored.id,
    provider: stored.provider,
    trust_mode: stored.trustMode,
    passed_check: stored.passedCheck,
    handshake: isHandshakeEvent(stored),
    headers: assembleDeliveryHeaders({
      eventId: stored.id,
      contentType: stored.contentType,
      copied,
      credentials: {},
    }),
    ...(query === undefined ? {} : { query }),
    ...(credentials.kind === 'original' ? { original_headers: credentials.headers } : {}),
  };
}
