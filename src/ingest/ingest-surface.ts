import type { Context, Middleware } from 'koa';
import { createKeyedRateLimiter } from '../auth/rate-limiter.ts';
import type { ProviderConfig, WebhookProviderConfig } from '../config/resolve-config.ts';
import {
  DATABASE_RETRY_AFTER_SECONDS,
  ERROR_REGISTRY,
  invalidArgument,
  methodNotAllowed,
  payloadTooLarge,
} from '../errors/app-error.ts';
import { sendError } from '../http/error-response.ts';
import { RECORD_REJECTED_PER_MINUTE, RECORD_REJECTED_PER_PROVIDER_PER_MINUTE } from '../../generated/constants.ts';
import type { Logger } from '../log/logger.ts';
import type { EventStore } from '../store/events/event-store.ts';
import { findMissingHeader } from '../verify/headers.ts';
import { getHandshake } from '../verify/handshakes.ts';
import { LazyBody } from '../verify/identify.ts';
import type { VerifyFailureReason, VerifyOutcome } from '../verify/preset-types.ts';
import { createGroupCommitter, type GroupCommitOptions, type GroupCommitter } from '../store/events/group-commit.ts';
import { declaredLength, readRawBody } from '../http/read-raw-body.ts';
import { rejectSourceKey } from './reject-source-key.ts';
import { safeIdentify, verifyBody } from './preset-calls.ts';
import { arrivedEvent } from './arrived-event.ts';
import { HOOKS_PREFIX } from '../shared/route-prefixes.ts';
import type { IngestReplies } from './reply-answer.ts';
import { logSenderHint, noProvider } from './ingest-answers.ts';
import {
  ACCEPTED,
  answerGetHandshake,
  refuseRejected,
  storeAccepted,
  unavailable,
  type Arrival,
  type IngestParts,
} from './arrival-outcomes.ts';

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

const REJECTED = ERROR_REGISTRY.unauthenticated.status;
const MALFORMED = ERROR_REGISTRY.invalid_argument.status;
const UNAVAILABLE = ERROR_REGISTRY.unavailable.status;

/**
 * The webhook receiver. Checks run in a fixed order, each with its own status: route (404),
 * method (405), declared length (413), required headers (400), body size while reading (413),
 * signature or token (401). A 200 is sent only after the event's row has committed; a database
 * failure is a 503 so the provider retries.
 */
export function createIngestSurface(options: IngestSurfaceOptions): Middleware {
  const routes = buildRoutes(options.providers);
  const parts = ingestParts(options);
  return async (ctx, next) => {
    const provider = routes.get(ctx.path);
    if (provider === undefined && !ctx.path.startsWith(`${HOOKS_PREFIX}/`)) {
      await next();
      return;
    }
    // A disabled provider looks exactly like an unknown route, so config is not revealed.
    if (provider === undefined || !provider.enabled) return noProvider(ctx);
    // Read only when something is logged: the request logger is built on first use, and an
    // accepted webhook logs nothing.
    return receive(parts, { ctx, provider, log: () => ctx.state.log });
  };
}

/** The parts every arrival shares, built once: the reject budgets and the group commit with its timeout. */
function ingestParts(options: IngestSurfaceOptions): IngestParts {
  const commitTimeoutMs = options.commitTimeoutMs ?? 10_000;
  // A rejected delivery costs its sender nothing but is written to disk, so each source (an IPv4
  // address, an IPv6 /64: one host's share) gets a bucket, a burst of perMinute refilled at
  // perMinute a minute, and each provider one more for senders rotating through many networks.
  const perMinute = options.recordRejectedPerMinute ?? RECORD_REJECTED_PER_MINUTE.default;
  const perProvider = options.recordRejectedPerProviderPerMinute ?? RECORD_REJECTED_PER_PROVIDER_PER_MINUTE.default;
  const sourceBudget = createKeyedRateLimiter({ capacity: perMinute, refillPerSecond: perMinute / 60 });
  const providerBudget = createKeyedRateLimiter({ capacity: perProvider, refillPerSecond: perProvider / 60 });
  const committer: GroupCommitter = createGroupCommitter({
    store: options.store,
    logger: options.logger,
    maxBatch: options.groupCommit?.maxBatch,
    maxConcurrentFlushes: options.groupCommit?.maxConcurrentFlushes,
    onFlush: options.groupCommit?.onFlush,
  });
  return {
    now: options.now ?? Date.now,
    retryAfterSeconds: options.retryAfterSeconds ?? DATABASE_RETRY_AFTER_SECONDS,
    onRejected: options.onRejected,
    onRejectNotRecorded: options.onRejectNotRecorded,
    replies: options.replies,
    claimNonce: options.claimNonce,
    mayRecordReject: (provider, sourceIp) =>
      sourceBudget.take(rejectSourceKey(sourceIp)).allowed && providerBudget.take(provider).allowed,
    store: (event, log) =>
      withTimeout(committer.submit(event), commitTimeoutMs, (late) => {
        // The sender was answered 503 (or, if it was rejected anyway, 401) before this commit was
        // confirmed: the stored answer must say what the sender really got.
        if (late.duplicate || event.request?.responseStatus !== ACCEPTED) return;
        options.store
          .recordResponseStatus(late.event.id, UNAVAILABLE)
          .catch((err: unknown) => log().warn({ err, eventId: late.event.id }, 'could not record the 503 answered'));
      }),
  };
}

/**
 * One arrival at a provider's route, in the pipeline's order: handshake or method, declared
 * length, required headers, then the body read within its limit. The order is the contract.
 */
async function receive(parts: IngestParts, arrival: Arrival): Promise<void> {
  const { ctx, provider, log } = arrival;
  const { preset } = provider;
  if (ctx.method === 'GET' && preset.handshake !== undefined) {
    const answer = getHandshake(preset.handshake, new URLSearchParams(ctx.querystring), provider.verifyToken);
    if (answer !== null) return answerGetHandshake(parts, arrival, answer);
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
  return check(parts, arrival, read.body);
}

/**
 * A received body: its credential looked for, its signature or token verified (and a single-use
 * token claimed), the event identified; then refused, or stored and answered.
 */
async function check(parts: IngestParts, arrival: Arrival, body: Buffer): Promise<void> {
  const { ctx, provider, log } = arrival;
  const { preset } = provider;
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
    nowMs: parts.now(),
    query: ctx.querystring,
  };
  let outcome: VerifyOutcome;
  try {
    outcome = await withNonceClaimed(parts.claimNonce, provider.name, verifyBody(preset, verifyInput), body);
  } catch (err: unknown) {
    return unavailable(parts, arrival, err);
  }
  // One parse of the body, shared by identify() and summarize().
  const parsed = new LazyBody(kept);
  const identity = safeIdentify(preset, kept, ctx.req.headers, parsed);
  const answered = outcome.ok ? ACCEPTED : outcome.reason === 'duplicate_json_key' ? MALFORMED : REJECTED;
  const event = arrivedEvent(ctx, { provider, kept, outcome, identity, parsed, answered });
  if (!outcome.ok) return refuseRejected(parts, arrival, event, outcome);
  if (provider.trustMode === 'open') logSenderHint(provider.name, ctx, log);
  return storeAccepted(parts, arrival, event, { outcome, parsed, verifyInput });
}

/**
 * A passing signature that does not cover the body carries a single-use token (37.2): it passes
 * only if this claims it, on any instance; a second use with other bytes fails. Throws when the
 * database does not answer.
 */
async function withNonceClaimed(
  claimNonce: IngestParts['claimNonce'],
  provider: string,
  outcome: VerifyOutcome,
  body: Buffer,
): Promise<VerifyOutcome> {
  if (!outcome.ok || outcome.nonce === undefined) return outcome;
  const { token, expiresAtMs } = outcome.nonce;
  if (await claimNonce(provider, token, expiresAtMs, body)) return outcome;
  return { ok: false, reason: 'reused_signature', detail: 'signature token already used' };
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
