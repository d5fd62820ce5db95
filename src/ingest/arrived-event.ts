/**
 * What of a webhook arrival is stored: the event row built from the request, the verdict and the
 * preset's identity, the sender's address as the row records it, and a rejected delivery cut to
 * what inspection needs. Pure over the request: ingest-surface.ts decides whether and when to store.
 */
import { isIP } from 'node:net';
import type { Context } from 'koa';
import type { WebhookProviderConfig } from '../config/resolve-config.ts';
import type { DeliveryBody, EventIdentity, VerifyOutcome } from '../verify/preset-types.ts';
import { sanitizeHeaders } from '../sanitize/sanitize-headers.ts';
import { arrivalRequest } from '../sanitize/sanitize-request.ts';
import type { NewEvent } from '../store/events/event-store.ts';
import { safeSummarize } from './preset-calls.ts';

/** A POST delivery as checked and identified, before it is stored. */
export interface CheckedArrival {
  provider: WebhookProviderConfig;
  /** The body as stored: any credential it carried blanked. */
  kept: Buffer;
  outcome: VerifyOutcome;
  identity: EventIdentity;
  /** The one parse of the body that identify() and summarize() share. */
  parsed: DeliveryBody;
  /** The status the sender is answered once the row has committed. */
  answered: number;
}

/** The event row of a checked POST delivery. */
export function arrivedEvent(ctx: Context, arrival: CheckedArrival): NewEvent {
  const { provider, outcome, identity } = arrival;
  const { preset } = provider;
  return {
    provider: provider.name,
    eventType: identity.eventType,
    trustMode: provider.trustMode,
    verified: provider.trustMode === 'signed' && outcome.ok,
    // Recorded for signed and token providers alike: replay re-attaches credentials only when true.
    ...(provider.trustMode === 'open' ? {} : { passedCheck: outcome.ok }),
    verifyDetail: outcome.detail,
    // A rejected delivery never claims the external id: if it did, the provider's genuine retry
    // (after a secret is fixed, say) would be acknowledged as a duplicate of the rejected row and
    // never stored. The id stays visible in the stored headers or body.
    externalId: outcome.ok ? identity.externalId : null,
    contentType: ctx.req.headers['content-type'] ?? null,
    sourceIp: clientIp(ctx),
    headers: sanitizeHeaders(ctx.req.rawHeaders, {
      sensitiveHeaders: preset.sensitiveHeaders,
      keepHeaders: preset.originalHeaders ?? [],
    }),
    payload: arrival.kept,
    summary: safeSummarize(preset, arrival.parsed, ctx.req.headers),
    // The status ingest answers once the row has committed: 200, or the 401 of a delivery that
    // failed its check (stored only for inspection).
    request: arrivalRequest(ctx, arrival.answered),
  };
}

/**
 * A rejected delivery is kept for inspection, not as data: its first maxBytes are enough to see
 * what was sent, and more would let anyone who can reach the route fill the disk. The bytes are
 * copied so the queued event does not pin the whole body.
 */
export function truncatedReject(event: NewEvent, maxBytes: number): NewEvent {
  if (event.payload.length <= maxBytes) return event;
  return { ...event, payload: Buffer.from(event.payload.subarray(0, maxBytes)), receivedSize: event.payload.length };
}

/**
 * ctx.ip is the socket address, or the X-Forwarded-For client when trust_proxy is on. A forwarded
 * value is whatever the proxy (or the client behind it) wrote, so it is kept only if it is an IP.
 */
export function clientIp(ctx: Context): string | null {
  return plainIp(ctx.ip) ?? plainIp(ctx.req.socket.remoteAddress ?? '');
}

/** An IP address, with IPv4-mapped IPv6 (::ffff:a.b.c.d) written as the IPv4 it is; null otherwise. */
function plainIp(value: string): string | null {
  const unmapped = value.toLowerCase().startsWith('::ffff:') && isIP(value.slice(7)) === 4 ? value.slice(7) : value;
  return isIP(unmapped) === 0 ? null : unmapped;
}
