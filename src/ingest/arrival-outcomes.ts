/**
 * How a webhook arrival ends once it has been checked: refused (and recorded while its source and
 * provider are under their rate), stored and answered, a GET handshake answered, or a 503 when the
 * database does not answer. Each step takes the surface's parts (IngestParts) and the arrival
 * explicitly, so the order of the pipeline reads in ingest-surface.ts and each step stands alone.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import type { WebhookProviderConfig } from '../config/resolve-config.ts';
import { AppError, ERROR_REGISTRY, invalidArgument } from '../errors/app-error.ts';
import { sendError } from '../http/error-response.ts';
import type { Logger } from '../log/logger.ts';
import type { InsertResult, NewEvent } from '../store/events/event-store.ts';
import { storedEventFromInsert } from '../store/events/event-mapping.ts';
import { postHandshake, type HandshakeAnswer, type HandshakeRefusal } from '../verify/handshakes.ts';
import type { LazyBody } from '../verify/identify.ts';
import type { VerifyFailureReason, VerifyInput, VerifyOutcome } from '../verify/preset-types.ts';
import { sanitizeHeaders } from '../sanitize/sanitize-headers.ts';
import { arrivalRequest } from '../sanitize/sanitize-request.ts';
import { safeVerify } from './preset-calls.ts';
import { clientIp, truncatedReject } from './arrived-event.ts';
import { answerReply, replyWaitFor, sendProviderAnswer, type IngestReplies } from './reply-answer.ts';
import { sendHandshakeAnswer } from './ingest-answers.ts';

// What the sender is answered, recorded with each stored delivery (NewEvent.request).
export const ACCEPTED = 200;

/** What every step of an arrival shares: the surface's options and the parts built once from them. */
export interface IngestParts {
  now: () => number;
  retryAfterSeconds: number;
  /** Claims a passing signature's single-use token (IngestSurfaceOptions.claimNonce). */
  claimNonce: (provider: string, token: string, expiresAtMs: number, body: Buffer) => Promise<boolean>;
  /** Told why a delivery failed verification (IngestSurfaceOptions.onRejected). */
  onRejected: ((provider: string, reason: VerifyFailureReason) => void) | undefined;
  /** Told when a rejected delivery was not recorded (IngestSurfaceOptions.onRejectNotRecorded). */
  onRejectNotRecorded: ((provider: string) => void) | undefined;
  /** Answers providers that wait for the app's reply; without it, none waits. */
  replies: IngestReplies | undefined;
  /** Takes one from the source's and the provider's budget for recording a rejected delivery. */
  mayRecordReject: (provider: string, sourceIp: string | null) => boolean;
  /** Submits to the group commit; rejects when the commit is not confirmed in time. */
  store: (event: NewEvent, log: () => Logger) => Promise<InsertResult>;
}

/** One arrival: its Koa context, the provider its route names, and the request logger, built on first use. */
export interface Arrival {
  ctx: Context;
  provider: WebhookProviderConfig;
  log: () => Logger;
}

/** Accepted and stored (or found already stored). */
interface IngestAccepted {
  id: string;
  duplicate: boolean;
}

/** The database did not answer: 503, so the provider retries. */
export function unavailable(parts: IngestParts, { ctx, provider, log }: Arrival, err: unknown): void {
  const reference = randomUUID();
  log().error({ err, provider: provider.name, correlationId: reference }, 'could not store webhook');
  sendError(
    ctx,
    new AppError('unavailable', `event not stored: database unavailable; retry later (reference ${reference})`, {
      retryAfterSeconds: parts.retryAfterSeconds,
      cause: err,
    }),
  );
}

/** A delivery that failed its check: 401, recorded (cut short) while its source and provider are under their rate. */
export async function refuseRejected(
  parts: IngestParts,
  { ctx, provider, log }: Arrival,
  event: NewEvent,
  outcome: Extract<VerifyOutcome, { ok: false }>,
): Promise<void> {
  parts.onRejected?.(provider.name, outcome.reason);
  log().info({ provider: provider.name, reason: outcome.reason, detail: outcome.detail }, 'webhook rejected');
  if (provider.recordRejected && !parts.mayRecordReject(provider.name, event.sourceIp)) {
    parts.onRejectNotRecorded?.(provider.name);
    log().debug({ provider: provider.name }, 'rejected delivery not recorded: source or provider over its rate');
  } else if (provider.recordRejected) {
    // Awaited so that the 401 is sent after the record exists, but its failure does not change
    // the answer: the delivery is refused either way, and a 503 would only invite retries of
    // something that will be refused again.
    await parts
      .store(truncatedReject(event, provider.recordRejectedMaxBytes), log)
      .catch((err: unknown) => log().warn({ err, provider: provider.name }, 'could not record rejected delivery'));
  }
  // A body that means two things is malformed (400), not a failed check: it is recorded the same way.
  sendError(
    ctx,
    outcome.reason === 'duplicate_json_key'
      ? invalidArgument(outcome.detail)
      : new AppError('unauthenticated', `verification failed: ${outcome.detail}`),
  );
}

/** What the checks learned that storing an accepted delivery needs again. */
export interface Checked {
  outcome: VerifyOutcome;
  parsed: LazyBody;
  verifyInput: VerifyInput;
}

/** A delivery that passed its check: stored, then answered 200 (or as its handshake asks); 503 if not stored. */
export async function storeAccepted(
  parts: IngestParts,
  arrival: Arrival,
  event: NewEvent,
  checked: Checked,
): Promise<void> {
  const { ctx, provider, log } = arrival;
  const { replies } = parts;
  const { preset } = provider;
  const { outcome, parsed, verifyInput } = checked;
  // A signed handshake (it passed its check above) is answered once its event is stored: the
  // event's type names it, and forward rules skip it (NewEvent.handshake).
  const handshake =
    preset.handshake === undefined
      ? null
      : postHandshake(preset.handshake, parsed, ctx.req.headers, () =>
          provider.secrets.find(
            (secret) => safeVerify(preset, { ...verifyInput, secrets: [secret], publicKeys: [] }).ok,
          ),
        );
  const wait = handshake === null ? replyWaitFor(provider, replies, event, parsed) : null;
  const stored: NewEvent =
    handshake === null
      ? { ...event, ...(wait?.kind === 'rule' ? { replyDelivery: wait.delivery } : {}) }
      : {
          ...event,
          eventType: handshake.eventType,
          handshake: true,
          verifyDetail: `${outcome.detail}; ${handshake.detail}`,
          request: arrivalRequest(ctx, handshake.status),
        };

  let result: InsertResult;
  try {
    result = await parts.store(stored, log);
  } catch (err: unknown) {
    return unavailable(parts, arrival, err);
  }
  if (handshake !== null) {
    log().info({ provider: provider.name, eventId: result.event.id }, handshake.detail);
    return sendHandshakeAnswer(ctx, handshake);
  }
  const { reply } = provider;
  if (wait !== null && reply !== undefined && replies !== undefined) {
    // A provider's retry of a stored delivery was sent to the app the first time: it gets the
    // fallback, and the app is not asked twice.
    return sendProviderAnswer(
      ctx,
      result.duplicate
        ? { ...reply.fallback, headers: {}, body: Buffer.from(reply.fallback.body) }
        : await answerReply(replies, wait, storedEventFromInsert(stored, result.event), reply),
    );
  }
  const accepted: IngestAccepted = { id: result.event.id, duplicate: result.duplicate };
  ctx.status = ACCEPTED;
  ctx.body = accepted;
}

/**
 * A GET handshake (Meta's subscribe, Dropbox's challenge): stored as an event of its own type
 * that never passed a check (the GET is not signed), answered after the row commits. Storing
 * costs the sender nothing, so it draws on the same per-source budget as rejected deliveries:
 * over it, the handshake is still answered but not recorded.
 */
export async function answerGetHandshake(
  parts: IngestParts,
  { ctx, provider, log }: Arrival,
  answer: HandshakeAnswer | HandshakeRefusal,
): Promise<void> {
  const refused = 'refused' in answer;
  const status = refused ? ERROR_REGISTRY.forbidden.status : answer.status;
  const event: NewEvent = {
    provider: provider.name,
    eventType: answer.eventType,
    trustMode: provider.trustMode,
    verified: false,
    passedCheck: false,
    handshake: true,
    verifyDetail: answer.detail,
    externalId: null,
    contentType: null,
    sourceIp: clientIp(ctx),
    headers: sanitizeHeaders(ctx.req.rawHeaders, { sensitiveHeaders: provider.preset.sensitiveHeaders }),
    payload: Buffer.alloc(0),
    summary: null,
    request: arrivalRequest(ctx, status),
  };
  const recorded = !refused || provider.recordRejected;
  if (recorded && parts.mayRecordReject(provider.name, event.sourceIp)) {
    try {
      await parts.store(event, log);
    } catch (err: unknown) {
      // A refusal is answered either way; an answer is not, since the provider retries a 503.
      log().warn({ err, provider: provider.name }, 'could not record handshake');
      if (!refused) {
        return sendError(
          ctx,
          new AppError('unavailable', 'handshake not recorded: database unavailable; retry later', {
            retryAfterSeconds: parts.retryAfterSeconds,
            cause: err,
          }),
        );
      }
    }
  }
  log().info({ provider: provider.name, refused }, answer.detail);
  if (refused) return sendError(ctx, new AppError('forbidden', answer.detail));
  sendHandshakeAnswer(ctx, answer);
}
