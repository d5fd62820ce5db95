/**
 * What one delivery sends besides its address: the stored headers a provider lets through, the
 * credentials the event earned on arrival (never more: trust is not laundered), the extra headers
 * of the caller, and the body (a preset may put back a credential it blanked when storing). Also
 * what an excerpt of the answer must not show.
 */
import type { Logger } from '../log/logger.ts';
import type { ProviderConfig } from '../config/resolve-config.ts';
import type { StoredEvent } from '../store/events/event-store.ts';
import { deliveryCredentials, secretHeadersOf, type CredentialKind, type DeliveryCredentials } from './credentials.ts';
import { credentialNeedles } from './redact-credentials.ts';
import {
  assembleDeliveryHeaders,
  deliveryHeaderSelection,
  selectStoredHeaders,
  type DeliveryHeaderSelection,
  type OutgoingHeaders,
} from './outgoing-headers.ts';

/** The part of a delivery request its headers depend on (deliver-event.ts's DeliverRequest). */
export interface HeaderRequest {
  event: StoredEvent;
  url: URL;
  unsigned: boolean;
  extraHeaders?: Readonly<Record<string, string>>;
  trace?: { credentials: CredentialKind | undefined; credentialHeaders?: readonly string[] };
}

export interface DeliveryPayload {
  headers: OutgoingHeaders;
  body: Buffer;
  needles: () => string[];
}

export function createDeliveryHeaders(options: {
  now: () => number;
  logger: Logger;
}): (request: HeaderRequest, provider: ProviderConfig | undefined) => DeliveryPayload {
  const { now, logger } = options;
  /** The headers to send, and what an excerpt of the answer must not show (redactCredentials). */
  function headersFor(
    request: HeaderRequest,
    provider: ProviderConfig | undefined,
  ): { headers: OutgoingHeaders; body: Buffer; needles: () => string[] } {
    const { event } = request;
    const credentials: DeliveryCredentials = request.unsigned
      ? { kind: 'none', reason: 'unsigned', headers: {} }
      : deliveryCredentials(provider, {
          body: event.payload,
          storedHeaders: event.headers,
          nowMs: now(),
          arrival: event,
          // A preset that signs the URL signs the query this delivery carries (shared/url-query.ts).
          query:
            provider?.family === 'webhook' && provider.publicUrl !== undefined
              ? request.url.search.slice(1)
              : undefined,
        });
    if (request.trace) {
      request.trace.credentials = credentials.kind;
      request.trace.credentialHeaders = Object.keys(credentials.headers).map((name) => name.toLowerCase());
    }
    if (
      credentials.kind === 'none' &&
      !request.unsigned &&
      provider?.family === 'webhook' &&
      provider.trustMode !== 'open'
    ) {
      logger.debug(
        { eventId: event.id, provider: event.provider, reason: credentials.reason },
        'event sent without credentials',
      );
    }
    const headers = assembleDeliveryHeaders({
      eventId: event.id,
      contentType: event.contentType,
      copied: selectStoredHeaders(event.headers, selectionFor(provider)),
      credentials: credentials.headers,
    });
    for (const [name, value] of Object.entries(request.extraHeaders ?? {})) headers[name.toLowerCase()] = value;
    const secrets = provider?.family === 'webhook' ? provider.secrets : [];
    // Worked out only when the consumer's answer left an excerpt to redact.
    return {
      headers,
      body: credentials.body ?? event.payload,
      needles: () => credentialNeedles(secrets, Object.values(credentials.headers)),
    };
  }

  /** Which stored headers may be copied depends on the provider alone: worked out once for each. */
  const selections = new Map<ProviderConfig | undefined, DeliveryHeaderSelection>();
  function selectionFor(provider: ProviderConfig | undefined): DeliveryHeaderSelection {
    let selection = selections.get(provider);
    if (selection === undefined) {
      selection = deliveryHeaderSelection(provider, secretHeadersOf(provider));
      selections.set(provider, selection);
    }
    return selection;
  }

  return headersFor;
}
