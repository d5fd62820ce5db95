/**
 * The provider's answer when it waits for the app's (config: reply): whether a delivery waits,
 * and writing what the reply source answered into the response. The waiting itself, the send and
 * its record, is the reply service's (forward/reply-service.ts: a forward rule's target) or
 * listen's (forward/listen-replies.ts: a connected `switchboard listen --reply`), which server/
 * hands to ingest.
 */
import type { Context } from 'koa';
import type { WebhookProviderConfig } from '../config/resolve-config.ts';
import type { ReplyConfig } from '../config/reply-config.ts';
import type { ListenReplies } from '../forward/listen-replies.ts';
import type { ProviderAnswer, ReplyWaiter } from '../forward/reply-service.ts';
import type { NewEvent, ReplyDelivery, StoredEvent } from '../store/events/event-store.ts';
import type { DeliveryBody } from '../verify/preset-types.ts';
import { deliveryWaits } from '../verify/reply-waits.ts';

/** Who answers providers that wait (config: reply), by source; without one, none of its providers waits. */
export interface IngestReplies {
  rules?: ReplyWaiter | undefined;
  listen?: Pick<ListenReplies, 'answer'> | undefined;
}

/** A delivery that waits: for a rule's target, with its reply attempt's outbox row, or for listen. */
export type ReplyWait = { kind: 'rule'; delivery: ReplyDelivery } | { kind: 'listen' };

/**
 * How this delivery waits for the app's answer, when it does: its provider has reply, the preset
 * says this kind of delivery waits, and (for a rule) the rule takes the event. Null otherwise (a
 * handshake never waits: switchboard answers it).
 */
export function replyWaitFor(
  provider: WebhookProviderConfig,
  replies: IngestReplies | undefined,
  event: NewEvent,
  parsed: DeliveryBody,
): ReplyWait | null {
  const { reply } = provider;
  if (reply === undefined || replies === undefined || event.handshake === true) return null;
  if (!deliveryWaits(reply.waits, parsed)) return null;
  if (reply.source.kind === 'listen') return replies.listen === undefined ? null : { kind: 'listen' };
  const delivery = replies.rules?.prepare(reply, event) ?? null;
  return delivery === null ? null : { kind: 'rule', delivery };
}

/** What the provider gets for a stored delivery that waits, from its source; never rejects. */
export async function answerReply(
  replies: IngestReplies,
  wait: ReplyWait,
  event: StoredEvent,
  reply: ReplyConfig,
): Promise<ProviderAnswer> {
  if (wait.kind === 'listen' && replies.listen !== undefined)
    return replies.listen.answer(event.id, event.provider, reply);
  if (wait.kind === 'rule' && replies.rules !== undefined) return replies.rules.answer(event, reply, wait.delivery);
  return {
    status: reply.fallback.status,
    contentType: reply.fallback.contentType,
    headers: {},
    body: Buffer.from(reply.fallback.body),
  };
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
