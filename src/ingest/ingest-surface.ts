import { randomUUID } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import { createKeyedRateLimiter } from '../auth/rate-limiter.ts';
import type { ProviderConfig, WebhookProviderConfig } from '../config/resolve-config.ts';
import {
  AppError,
  DATABASE_RETRY_AFTER_SECONDS,
  ERROR_REGISTRY,
  invalidArgument,
  methodNotAllowed,
  payloadTooLarge,
} from '../errors/app-error.ts';
import { sendError } from '../http/error-response.ts';
import { RECORD_REJECTED_PER_MINUTE, RECORD_REJECTED_PER_PROVIDER_PER_MINUTE } from '../../generated/constants.ts';
import type { Logger } from '../log/logger.ts';
import type { EventStore, InsertResult, NewEvent } from '../store/events/event-store.ts';
import { storedEventFromInsert } from '../store/events/event-mapping.ts';
import { findMissingHeader } from '../verify/headers.ts';
import { getHandshake, postHandshake, type HandshakeAnswer, type HandshakeRefusal } from '../verify/handshakes.ts';
import { LazyBody } from '../verify/identify.ts';
import type { VerifyFailureReason, VerifyInput, VerifyOutcome } from '../verify/preset-types.ts';
import { createGroupCommitter, type GroupCommitOptions, type GroupCommitter } from '../store/events/group-commit.ts';
import { declaredLength, readRawBody } from '../http/read-raw-body.ts';
import { sanitizeHeaders } from '../sanitize/sanitize-headers.ts';
import { arrivalRequest } from '../sanitize/sanitize-request.ts';
import { rejectSourceKey } from './reject-source-key.ts';
import { safeIdentify, safeVerify, verifyBody } from './preset-calls.ts';
import { arrivedEvent, clientIp, truncatedReject } from './arrived-event.ts';
import { HOOKS_PREFIX } from '../shared/route-prefixes.ts';
import { answerReply, replyWaitFor, sendProviderAnswer, type IngestReplies } from './reply-answer.ts';
import { logSenderHint, noProvider, sendHandshakeAnswer } from './ingest-answers.ts';

export interface IngestSurfaceOptions {
  /** Every configured provider; queue providers are ignored here. */
  providers: readonly ProviderConfig[];
  store: EventStore;
  logger: Logger;
  /** Milliseconds since the epoch; injectable so tests can move the clock. */
  now?: (() => number) | undefined;
  groupCommit?: Pick<GroupCommitOptions, 'maxBatch' | 'maxConcurrentFlushes' | 'onFlush'> | undefined;
  /** After this long without a commit the delivery is answered 503; default 10 s. */
  commitTimeoutMs?: number | undefined;
  /** Retry-After sent with 503; default 5. */
  retryAfterSeconds?: number;
  /**
   * Claims a passing signature's single-use token (SignatureNonce) for a provider, across every
   * instance; false when it was used already. The store's, handed in by the wiring.
   */
  claimNonce: (provider: string, token: string, expiresAtMs: number, body: Buffer) => Promise<boolean>;
  /** Told why a delivery failed verification (for metrics); never given the secret or signature. */
  onRejected?: (provider: string, reason: VerifyFailureReason) => void;
  /** ResolvedConfig.ingest.recordRejectedPerMinute: rejected deliveries stored per source address. */
  recordRejectedPerMinute?: number;
  /** ResolvedConfig.ingest.recordRejectedPerProviderPerMinute: rejected deliveries stored per provider. */
  recordRejectedPerProviderPerMinute?: number;
  /** Told when a rejected delivery was not stored because its source address was over that rate. */
  onRejectNotRecorded?: (provider: string) => void;
  /** Answers providers that wait for the app's reply (config: reply); without it, none waits. */
  replies?: IngestReplies | undefined;
}

// What the sender is answered, recorded with each stored delivery (NewEvent.request).
const ACCEPTED = 200;
const REJECTED = ERROR_REGISTRY.unauthenticated.status;
const MALFORMED = ERROR_REGISTRY.invalid_argument.status;
const UNAVAILABLE = ERROR_REGISTRY.unavailable.status;

/** The fixed prefix of default routes: anything under it that is not a provider gets 404 here. */

/** Accepted and stored (or found already stored). */
interface IngestAccepted {
  id: string;
  duplicate: boolean;
}

/**
 * The webhook receiver. Checks run in a fixed order, each with its own status: route (404),
 * method (405), declared length (413), required headers (400), body size while reading (413),
 * signature or token (401). A 200 is sent only after the event's row has committed; a database
 * failure is a 503 so the provider retries.
 * Over 80 lines: the ingest pipeline in its order (limit, read, verify, identify, store, answer)
 * over state its stages share; splitting it would hide that order.
 */
export function createIngestSurface(options: IngestSurfaceOptions): Middleware {
  const now = options.now ?? Date.now;
  const commitTimeoutMs = options.commitTimeoutMs ?? 10_000;
  const retryAfterSeconds = options.retryAfterSeconds ?? DATABASE_RETRY_AFTER_SECONDS;
  const routes = buildRoutes(options.providers);
  // A rejected delivery costs its sender nothing but is written to disk, so each source (an IPv4
  // address, an IPv6 /64: one host's share) gets a bucket, a burst of perMinute refilled at
  // perMinute a minute, and each provider one more for senders rotating through many networks.
  const perMinute = options.recordRejectedPerMinute ?? RECORD_REJECTED_PER_MINUTE.default;
  const perProvider = options.recordRejectedPerProviderPerMinute ?? RECORD_REJECTED_PER_PROVIDER_PER_MINUTE.default;
  const sourceBudget = createKeyedRateLimiter({ capacity: perMinute, refillPerSecond: perMinute / 60 });
  const providerBudget = createKeyedRateLimiter({ capacity: perProvider, refillPerSecond: perProvider / 60 });
  const mayRecordReject = (provider: string, sourceIp: string | null): boolean =>
    sourceBudget.take(rejectSourceKey(sourceIp)).allowed && providerBudget.take(provider).allowed;
  const committer: GroupCommitter = createGroupCommitter({
    store: options.store,
    logger: options.logger,
    maxBatch: options.groupCommit?.maxBatch,
    maxConcurrentFlushes: options.groupCommit?.maxConcurrentFlushes,
    onFlush: options.groupCommit?.onFlush,
  });

  const store = (event: NewEvent, log: () => Logger): Promise<InsertResult> =>
    withTimeout(committer.submit(event), commitTimeoutMs, (late) => {
      // The sender was answered 503 (or, if it was rejected anyway, 401) before this commit was
      // confirmed: the stored answer must say what the sender really got.
      if (late.duplicate || event.request?.responseStatus !== ACCEPTED) return;
      options.store
        .recordResponseStatus(late.event.id, UNAVAILABLE)
        .catch((err: unknown) => log().warn({ err, eventId: late.event.id }, 'could not record the 503 answered'));
    });

  // One arrival in the pipeline's order (route, limit, read, verify, identify, then refuse or
  // store and answer); each stage hands the next what it learned, and the order is the contract.
  return async (ctx, next) => {
    const provider = routes.get(ctx.path);
    if (provider === undefined && !ctx.path.startsWith(`${HOOKS_PREFIX}/`)) {
      await next();
      return;
    }
    // A disabled provider looks exactly like an unknown route, so config is not revealed.
    if (provider === undefined || !provider.enabled) return noProvider(ctx);
    const { preset } = provider;
    // Read only when something is logged: the request logger is built on first use, and an
    // accepted webhook logs nothing.
    const log = (): Logger => ctx.state.log;

    if (ctx.method === 'GET' && preset.handshake !== undefined) {
      const answer = getHandshake(preset.handshake, new URLSearchParams(ctx.querystring), provider.verifyToken);
      if (answer !== null) return answerGetHandshake(ctx, provider, answer);
    }
    if (ctx.method !== 'POST') {
      return sendError(ctx, methodNotAllowed(ctx.method, ctx.path, ['POST']));
    }
    const declared = declaredLength(ctx.req);
    if (declared !== undefined && declared > provider.maxBodyBytes) {
      return tooLarge(ctx, provider);
    }
    // Deliveries without the scheme's headers are refused before the body is read and are not
    // recorded: they are not attempts at this provider's protocol (scanners, a sender pointed at
    // the wrong route), and storing them would let anyone fill the database with no effort.
    const missing = findMissingHeader(preset.requiredHeaders, ctx.req.headers);
    if (missing !== null) {
      log().info({ provider: provider.name, missing }, 'webhook refused: missing header');
      return sendError(ctx, invalidArgument(`missing header ${missing}`));
    }

    const read = await readRawBody(ctx.req, provider.maxBodyBytes);
    if (read.kind === 'too_large') return tooLarge(ctx, provider);
    if (read.kind === 'aborted') {
      log().info({ provider: provider.name, err: read.error }, 'webhook body not received completely');
      return sendError(ctx, invalidArgument('request body incomplete'));
    }
    const body = read.body;
    const nowMs = now();
    // A credential the body carries (Figma's passcode) is looked for as a header is: without it the
    // delivery is 400 and not recorded. Only verify() sees it; what is stored, named and summarised
    // is the delivery with that value blanked and every other byte as received.
    const { bodyCredential } = preset;
    if (bodyCredential !== undefined && !bodyCredential.present(body)) {
      log().info({ provider: provider.name, missing: bodyCredential.name }, 'webhook refused: missing credential');
      return sendError(ctx, invalidArgument(`missing ${bodyCredential.name}`));
    }
    const kept = bodyCredential === undefined ? body : bodyCredential.redact(body);

    const verifyInput = {
      body,
      headers: ctx.req.headers,
      secrets: provider.secrets,
      publicKeys: provider.publicKeys,
      toleranceSeconds: provider.toleranceSeconds,
      nowMs,
      query: ctx.querystring,
    };
    let outcome: VerifyOutcome;
    try {
      outcome = await withNonceClaimed(provider.name, verifyBody(preset, verifyInput), body);
    } catch (err: unknown) {
      return unavailable(ctx, provider, err, log);
    }
    // One parse of the body, shared by identify() and summarize().
    const parsed = new LazyBody(kept);
    const identity = safeIdentify(preset, kept, ctx.req.headers, parsed);
    const answered = outcome.ok ? ACCEPTED : outcome.reason === 'duplicate_json_key' ? MALFORMED : REJECTED;
    const event = arrivedEvent(ctx, { provider, kept, outcome, identity, parsed, answered });
    if (!outcome.ok) return refuseRejected(ctx, provider, event, outcome, log);
    if (provider.trustMode === 'open') logSenderHint(provider.name, ctx, log);
    return storeAccepted(ctx, provider, event, { outcome, parsed, verifyInput }, log);
  };

  /**
   * A passing signature that does not cover the body carries a single-use token (37.2): it passes
   * only if this claims it, on any instance; a second use with other bytes fails. Throws when the
   * database does not answer.
   */
  async function withNonceClaimed(provider: string, outcome: VerifyOutcome, body: Buffer): Promise<VerifyOutcome> {
    if (!outcome.ok || outcome.nonce === undefined) return outcome;
    const { token, expiresAtMs } = outcome.nonce;
    if (await options.claimNonce(provider, token, expiresAtMs, body)) return outcome;
    return { ok: false, reason: 'reused_signature', detail: 'signature token already used' };
  }

  /** The database did not answer: 503, so the provider retries. */
  function unavailable(ctx: Context, provider: WebhookProviderConfig, err: unknown, log: () => Logger): void {
    const reference = randomUUID();
    log().error({ err, provider: provider.name, correlationId: reference }, 'could not store webhook');
    sendError(
      ctx,
      new AppError('unavailable', `event not stored: database unavailable; retry later (reference ${reference})`, {
        retryAfterSeconds,
        cause: err,
      }),
    );
  }

  /** A delivery that failed its check: 401, recorded (cut short) while its source and provider are under their rate. */
  async function refuseRejected(
    ctx: Context,
    provider: WebhookProviderConfig,
    event: NewEvent,
    outcome: Extract<VerifyOutcome, { ok: false }>,
    log: () => Logger,
  ): Promise<void> {
    options.onRejected?.(provider.name, outcome.reason);
    log().info({ provider: provider.name, reason: outcome.reason, detail: outcome.detail }, 'webhook rejected');
    if (provider.recordRejected && !mayRecordReject(provider.name, event.sourceIp)) {
      options.onRejectNotRecorded?.(provider.name);
      log().debug({ provider: provider.name }, 'rejected delivery not recorded: source or provider over its rate');
    } else if (provider.recordRejected) {
      // Awaited so that the 401 is sent after the record exists, but its failure does not change
      // the answer: the delivery is refused either way, and a 503 would only invite retries of
      // something that will be refused again.
      await store(truncatedReject(event, provider.recordRejectedMaxBytes), log).catch((err: unknown) =>
        log().warn({ err, provider: provider.name }, 'could not record rejected delivery'),
      );
    }
    // A body that means two things is malformed (400), not a failed check: it is recorded the same way.
    sendError(
      ctx,
      outcome.reason === 'duplicate_json_key'
        ? invalidArgument(outcome.detail)
        : new AppError('unauthenticated', `verification failed: ${outcome.detail}`),
    );
  }

  /** A delivery that passed its check: stored, then answered 200 (or as its handshake asks); 503 if not stored. */
  async function storeAccepted(
    ctx: Context,
    provider: WebhookProviderConfig,
    event: NewEvent,
    checked: { outcome: VerifyOutcome; parsed: LazyBody; verifyInput: VerifyInput },
    log: () => Logger,
  ): Promise<void> {
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
    const wait = handshake === null ? replyWaitFor(provider, options.replies, event, parsed) : null;
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
      result = await store(stored, log);
    } catch (err: unknown) {
      return unavailable(ctx, provider, err, log);
    }
    if (handshake !== null) {
      log().info({ provider: provider.name, eventId: result.event.id }, handshake.detail);
      return sendHandshakeAnswer(ctx, handshake);
    }
    const { reply } = provider;
    if (wait !== null && reply !== undefined && options.replies !== undefined) {
      // A provider's retry of a stored delivery was sent to the app the first time: it gets the
      // fallback, and the app is not asked twice.
      return sendProviderAnswer(
        ctx,
        result.duplicate
          ? { ...reply.fallback, headers: {}, body: Buffer.from(reply.fallback.body) }
          : await answerReply(options.replies, wait, storedEventFromInsert(stored, result.event), reply),
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
  async function answerGetHandshake(
    ctx: Context,
    provider: WebhookProviderConfig,
    answer: HandshakeAnswer | HandshakeRefusal,
  ): Promise<void> {
    const log = (): Logger => ctx.state.log;
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
    if (recorded && mayRecordReject(provider.name, event.sourceIp)) {
      try {
        await store(event, log);
      } catch (err: unknown) {
        // A refusal is answered either way; an answer is not, since the provider retries a 503.
        log().warn({ err, provider: provider.name }, 'could not record handshake');
        if (!refused) {
          return sendError(
            ctx,
            new AppError('unavailable', 'handshake not recorded: database unavailable; retry later', {
              retryAfterSeconds,
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
}

/** Webhook providers by route; each carries the preset config resolution built for it. */
function buildRoutes(providers: readonly ProviderConfig[]): Map<string, WebhookProviderConfig> {
  const routes = new Map<string, WebhookProviderConfig>();
  for (const provider of providers) if (provider.family === 'webhook') routes.set(provider.route, provider);
  return routes;
}

/**
 * Closes the connection: the rest of the body is not wanted, and keeping the socket would mean
 * reading it all to find the next request.
 */
function tooLarge(ctx: Context, provider: WebhookProviderConfig): void {
  sendError(ctx, payloadTooLarge(provider.maxBodyBytes, { closeConnection: true }));
}

/** Rejects after `ms`; a value that arrives after that goes to onLate instead. */
function withTimeout<T>(promise: Promise<T>, ms: number, onLate: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      reject(new Error(`commit not confirmed within ${ms} ms`));
    }, ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        if (timedOut) onLate(value);
        else resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
