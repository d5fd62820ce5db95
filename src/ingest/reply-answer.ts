/**
 * The provider's answer when it waits for the app's (config: reply): whether a delivery waits,
 * and writing what the reply service answered into the response. The waiting itself, the send and
 * its record, is the reply service's (forward/reply-service.ts), which server/ hands to ingest.
 */
import type { Context } from 'koa';
import type { WebhookProviderConfig } from '../config/resolve-config.ts';
import type { ProviderAnswer, ReplyWaiter } from '../forward/reply-service.ts';
import type { NewEvent, ReplyDelivery } from '../store/events/event-store.ts';
import type { DeliveryBody } from '../verify/preset-types.ts';
import { deliveryWaits } from '../verify/reply-waits.ts';

/**
 * The reply attempt's outbox row when this delivery waits for the app's answer: its provider has
 * reply, the preset says this kind of delivery waits, and the rule takes the event. Null otherwise
 * (a handshake never waits: switchboard answers it).
 */
export function replyDeliveryFor(
  provider: WebhookProviderConfig,
  replies: ReplyWaiter | undefined,
  event: NewEvent,
  parsed: DeliveryBody,
): ReplyDelivery | null {
  const { reply } = provider;
  if (reply === undefined || replies === undefined || event.handshake === true) return null;
  if (!deliveryWaits(reply.waits, parsed)) return null;
  return replies.prepare(reply, event);
}

/** Sends the app's answer (or the fallback) as the response: status, body, Content-Type and the allowed headers. */
export function sendProviderAnswer(ctx: Context, answer: ProviderAnswer): void {
  ctx.status = answer.status;
  ctx.body = answer.body;
  // Koa types a Buffer body application/octet-stream; the provider gets the app's type, or none.
  if (answer.contentType === undefined) ctx.remove('Content-Type');
  else ctx.set('Content-Type', answer.contentType);
  for (const [name, value] of Object.entries(answer.headers)) ctx.set(name, value);
}
