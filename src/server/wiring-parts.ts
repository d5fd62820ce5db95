/**
 * The parts buildSurfaces (build-surfaces.ts) assembles, one function per group: stores, jobs,
 * authentication, the sending path, forwarding and the two surfaces with the most wiring.
 */
import type { Middleware } from 'koa';
import { createDeliveryRepository, type DeliveryRepository } from '../store/outbox/delivery-repository.ts';
import { createEventStore, type PgEventStore } from '../store/events/pg-event-store.ts';
import {
  createReplayAttemptRepository,
  type ReplayAttemptRepository,
} from '../store/records/replay-attempt-repository.ts';
import { createTokenRepository, type TokenRepository } from '../store/records/token-repository.ts';
import { startRetention } from '../store/partitions/retention.ts';
import { startPartitionMaintenance } from '../store/partitions/partitions.ts';
import type { IngestPressure } from '../store/events/ingest-pressure.ts';
import { startSearchIndexer } from '../store/events/search-indexer.ts';
import type { EventStore } from '../store/events/event-store.ts';
import type { PostgresEventBus } from '../bus/postgres-event-bus.ts';
import { startQueueSources, type QueueSources } from '../queue/queue-sources.ts';
import type { QueueConnectionState } from '../provider-directory/provider-directory.ts';
import { createHostCheck } from '../auth/host-check.ts';
import { createRateLimiter, type RateLimiter } from '../auth/rate-limiter.ts';
import { TokenService } from '../auth/token-service.ts';
import { requireBearer } from '../auth/require-bearer.ts';
import { createReplayService } from '../replay/replay-service.ts';
import type { ReplayService } from '../replay/replay-types.ts';
import { forwardRuleMatcher } from '../config/forward-rules.ts';
import { interruptedReplyAfterMs } from '../config/reply-config.ts';
import { createOutbound, type Outbound } from '../outbound/deliver-event.ts';
import type { SelfAddress } from '../outbound/target-policy/self-loop.ts';
import { checkForwardTargets } from '../forward/check-forward-targets.ts';
import { createForwardControl, type ForwardControl } from '../forward/forward-control.ts';
import { claimConnectionsFor, openClaimConnection } from '../store/outbox/claim-connection.ts';
import { startForwardDispatcher, type ForwardDispatcher } from '../forward/forward-dispatcher.ts';
import { attemptPrinter } from '../terminal/serve-lines.ts';
import { createIngestSurface } from '../ingest/ingest-surface.ts';
import { createNonceClaims, startNonceExpiry } from '../store/records/signature-nonces.ts';
import { ListenReplies } from '../forward/listen-replies.ts';
import { ReplyService } from '../forward/reply-service.ts';
import type { IngestReplies } from '../ingest/reply-answer.ts';
import { createMcpSurface, type McpSurface } from '../mcp/create-mcp-surface.ts';
import { createApiSurface } from '../api/create-api-surface.ts';
import type { ProviderDirectory } from '../provider-directory/provider-directory.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { observeForwarding } from '../metrics/metrics-route.ts';
import { countRateLimited, instrumentIngest, instrumentReplay } from '../metrics/instrument.ts';
import type { Cleanup, SurfaceDeps } from './surface-deps.ts';
import { roleParts } from './server-role.ts';

export interface Stores {
  store: PgEventStore;
  deliveries: DeliveryRepository;
  tokens: TokenRepository;
  replayAttempts: ReplayAttemptRepository;
}

export function buildStores({ config, pool, databaseUrl, logger }: SurfaceDeps, cleanups: Cleanup[]): Stores {
  // The outbox: with forward rules, each stored event queues its deliveries in its own statement;
  // that same statement announces the new events on the live bus (store/events/announcement.ts).
  const forwardRulesFor = forwardRuleMatcher(config.forward);
  // Connects on its first statement: only a process that forwards ever opens it.
  const claims = openClaimConnection(databaseUrl, {
    logger,
    maxConnections: claimConnectionsFor(config.forward.length),
  });
  cleanups.push(() => claims.close());
  return {
    store: createEventStore(pool, {
      ...(forwardRulesFor ? { forwardRulesFor } : {}),
      searchTimeoutMs: config.api.searchTimeoutMs,
    }),
    deliveries: createDeliveryRepository(pool, claims),
    tokens: createTokenRepository(pool),
    replayAttempts: createReplayAttemptRepository(pool),
  };
}

export interface Auth {
  limiter: RateLimiter;
  checkRead: (caller: string) => void;
  checkWrite: (caller: string) => void;
  authenticate: Middleware;
  checkHost: Middleware;
}

/** Bearer tokens, the host check and the per-caller buckets /mcp and /api share. */
export function buildAuth(deps: SurfaceDeps, tokens: TokenRepository, metrics: Metrics, cleanups: Cleanup[]): Auth {
  const { config, logger } = deps;
  const limiter = createRateLimiter({ limits: config.rateLimits });
  const tokenService = new TokenService({ tokens, envToken: deps.envToken, logger });
  cleanups.push(() => Promise.resolve(tokenService.close()));
  return {
    limiter,
    checkRead: countRateLimited(limiter.checkRead, 'read', metrics),
    checkWrite: countRateLimited(limiter.checkWrite, 'write', metrics),
    authenticate: requireBearer(tokenService, { logger, cliCommand: deps.cliCommand }),
    checkHost: createHostCheck({ bindHost: deps.bindHost, allowedHosts: config.server.allowedHosts }),
  };
}

export interface Sending {
  outbound: Outbound;
  replay: ReplayService;
  /** switchboard's own address, known once it listens: nothing is sent there. */
  setSelf(self: SelfAddress): void;
}

/** The one sending path (replay and forwarding both deliver through it) and the replay service. */
export function buildSending(
  deps: SurfaceDeps,
  stores: Pick<Stores, 'replayAttempts'> & { store: EventStore },
  limiter: RateLimiter,
  metrics: Metrics,
  cleanups: Cleanup[],
): Sending {
  const { config, logger } = deps;
  let selfAddresses: SelfAddress[] = [];
  if (config.outbound.allowFrom === 'replay.allow') {
    logger.warn('replay.allow is the old name of outbound.allow, which governs replay and forwarding; rename it');
  }
  const outbound = createOutbound({
    providers: config.providers,
    allow: config.outbound.allow,
    selfAddresses: () => selfAddresses,
    logger,
    ...deps.overrides?.outbound,
  });
  // Closed after the dispatcher stops (cleanups run in reverse): forwarding's kept connections.
  cleanups.push(() => outbound.close());
  const replay = createReplayService({
    store: stores.store,
    attempts: stores.replayAttempts,
    providers: config.providers,
    replay: config.replay,
    checkRateLimit: countRateLimited(limiter.checkReplay, 'replay', metrics),
    logger,
    outbound,
  });
  return {
    outbound,
    replay: instrumentReplay(replay, metrics),
    setSelf: (self) => {
      selfAddresses = [self];
    },
  };
}

/**
 * Who answers providers that wait for the app's answer (config: reply): the reply service for a
 * forward rule's target, through the one sending path, settling the rule's outbox rows; listen's
 * for `switchboard listen --reply`, whose streams and answers /api serves. Their records finish
 * before the database closes (cleanups run in reverse).
 */
export function buildReplies(
  deps: SurfaceDeps,
  parts: { store: EventStore; deliveries: DeliveryRepository; outbound: Outbound },
  metrics: Metrics,
  cleanups: Cleanup[],
): { rules?: ReplyService | undefined; listen?: ListenReplies | undefined } {
  const { config, logger } = deps;
  const sources = config.providers.flatMap((p) => (p.family === 'webhook' && p.reply ? [p.reply.source.kind] : []));
  let rules: ReplyService | undefined;
  let listen: ListenReplies | undefined;
  if (sources.includes('rule')) {
    const service = new ReplyService({ ...parts, rules: config.forward, logger });
    cleanups.push(() => service.drain());
    rules = service;
  }
  if (sources.includes('listen')) {
    const hub = new ListenReplies({
      store: parts.store,
      logger,
      onLate: (provider) => metrics.lateReplies.inc({ provider }),
    });
    cleanups.push(() => hub.drain());
    listen = hub;
  }
  return { rules, listen };
}

export function ingestSurface(
  deps: SurfaceDeps,
  store: EventStore,
  metrics: Metrics,
  pressure: IngestPressure,
  replies?: IngestReplies,
): Middleware {
  const { config, logger } = deps;
  const ingest = createIngestSurface({
    providers: config.providers,
    store,
    logger,
    claimNonce: createNonceClaims(deps.pool),
    groupCommit: { onFlush: (events) => pressure.flushed(events) },
    onRejected: (provider, reason) => metrics.verificationFailures.inc({ provider, reason }),
    recordRejectedPerMinute: config.ingest.recordRejectedPerMinute,
    recordRejectedPerProviderPerMinute: config.ingest.recordRejectedPerProviderPerMinute,
    onRejectNotRecorded: (provider) => metrics.rejectedNotRecorded.inc({ provider }),
    replies,
    ...deps.overrides?.ingest,
  });
  return instrumentIngest(ingest, config.providers, metrics);
}

/**
 * Queue consumers (ingest's), retention and search indexing (a worker's), unless a harness runs
 * without them. Returns how the provider directory learns each queue provider's connection state.
 */
export function startJobs(
  deps: SurfaceDeps,
  store: EventStore,
  cleanups: Cleanup[],
  pressure: IngestPressure,
): (name: string) => QueueConnectionState | undefined {
  const fixed = deps.overrides?.withoutJobs;
  if (fixed !== undefined) return () => fixed.queueConnection;
  const { config, logger, pool } = deps;
  const runs = roleParts(config.server.role);
  if (runs.worker) {
    // Several workers share these through the database: retention runs under an advisory lock,
    // the indexer takes its batches with SKIP LOCKED.
    const retention = startRetention({ pool, config: config.retention, logger });
    cleanups.push(() => retention.stop());
    const partitions = startPartitionMaintenance({ pool, unit: config.store.partition, logger });
    cleanups.push(() => partitions.stop());
    const nonces = startNonceExpiry({ pool, logger });
    cleanups.push(() => nonces.stop());
    // With ingest in the same process, indexing gives way to a burst of webhooks for a while.
    const searchIndexer = startSearchIndexer({
      pool,
      logger,
      ...(runs.ingest ? { ingestPressed: () => pressure.pressed() } : {}),
    });
    cleanups.push(() => searchIndexer.stop());
  }
  if (!runs.ingest) return () => undefined;
  const queues: QueueSources = startQueueSources({
    providers: config.providers,
    redisUrl: deps.redisUrl,
    store,
    logger,
  });
  cleanups.push(() => queues.stop());
  return (name) => queues.connectionOf(name);
}

export interface Forwarding {
  /** What the API asks of forwarding; its wake-ups reach the dispatcher once it runs. */
  control: ForwardControl;
  start(self: SelfAddress): Promise<void>;
  /** Idempotent. */
  stop(drainMs: number): Promise<void>;
}

/** The forward rules' control (built now) and dispatcher (started once the port is known). */
export function forwardingControl(
  deps: SurfaceDeps,
  deliveries: DeliveryRepository,
  outbound: Outbound,
  bus: PostgresEventBus,
  metrics: Metrics,
): Forwarding {
  const { config, logger } = deps;
  let dispatcher: ForwardDispatcher | undefined;
  let stopGauges: (() => void) | undefined;
  const control = createForwardControl({
    rules: config.forward,
    deliveries,
    wake: (rule) => dispatcher?.wake(rule),
  });
  return {
    control,
    start: async (self) => {
      // An ingest process queues deliveries (the outbox rows commit with their events) and answers
      // /api/forwards; worker processes send them.
      if (!roleParts(config.server.role).worker) return;
      // A rule removed from the config leaves no delivery pending forever, nor one a later rule
      // of the same name would send to its own target (26.5).
      const cancelled = await deliveries.cancelUnconfigured(config.forward.map((rule) => rule.name));
      for (const [rule, count] of cancelled) {
        logger.warn({ rule, cancelled: count }, 'cancelled the open deliveries of a forward rule no longer configured');
      }
      const interrupted = await deliveries.deadInterruptedReplies(
        interruptedReplyAfterMs(config.providers.map((p) => (p.family === 'webhook' ? p.reply : undefined))),
      );
      for (const [rule, count] of interrupted) {
        logger.warn({ rule, interrupted: count }, 'reply attempts interrupted by a stop are dead, not sent again');
      }
      if (config.forward.length === 0) return;
      // Checked once the port is known, so a rule pointing at switchboard itself is refused (exit 2).
      const printAttempt = deps.terminal === undefined ? undefined : attemptPrinter(deps.terminal);
      const targets = await checkForwardTargets(config.forward, {
        policy: outbound.policy,
        selfAddresses: [self],
        webhookRoutes: outbound.webhookRoutes,
        logger,
      });
      dispatcher = startForwardDispatcher({
        rules: config.forward,
        targets,
        deliveries,
        outbound,
        subscribe: (listener) => bus.subscribe(() => listener()),
        logger,
        onAttempt: (attempt) => {
          const { rule, outcome, seconds } = attempt;
          metrics.forwardDeliveries.inc({ rule, outcome });
          metrics.forwardAttemptDuration.observe({ rule }, seconds);
          printAttempt?.(attempt);
        },
      });
      const stop = observeForwarding(metrics, () => deliveries.health(config.forward.map((rule) => rule.name)));
      stopGauges = stop;
    },
    stop: async (drainMs) => {
      stopGauges?.();
      stopGauges = undefined;
      const running = dispatcher;
      dispatcher = undefined;
      await running?.stop(drainMs);
    },
  };
}

/** What the read surfaces are handed besides the deps: the parts built before them. */
export interface ReadParts {
  providers: ProviderDirectory;
  replay: ReplayService;
  bus: PostgresEventBus;
  auth: Auth;
}

export function mcpSurface(deps: SurfaceDeps, parts: ReadParts & { store: EventStore }): McpSurface {
  const { config } = deps;
  return createMcpSurface({
    store: parts.store,
    providers: parts.providers,
    replay: parts.replay,
    bus: parts.bus,
    checkReadLimit: parts.auth.checkRead,
    checkHost: parts.auth.checkHost,
    authenticate: parts.auth.authenticate,
    logger: deps.logger,
    cliCommand: deps.cliCommand,
    sessions: config.mcp,
    replayDefaultTarget: config.replay.defaultTarget,
    replayRate: config.rateLimits.replay,
    ...deps.overrides?.mcp,
  });
}

export function apiSurface(
  deps: SurfaceDeps,
  parts: ReadParts & {
    stores: Pick<Stores, 'replayAttempts'> & { store: EventStore };
    forward: ForwardControl;
    /** Ends every open /api/stream at shutdown. */
    signal: AbortSignal;
    /** Offers deliveries that wait to `switchboard listen --reply` and takes its answers. */
    listenReplies: ListenReplies | undefined;
  },
): Middleware {
  const { config } = deps;
  return createApiSurface({
    store: parts.stores.store,
    replayAttempts: parts.stores.replayAttempts,
    providers: parts.providers,
    providerConfigs: config.providers,
    bus: parts.bus,
    replay: parts.replay,
    replayDefaultTarget: config.replay.defaultTarget,
    ...(deps.cliCommand === undefined ? {} : { cliCommand: deps.cliCommand }),
    checkHost: parts.auth.checkHost,
    authenticate: parts.auth.authenticate,
    checkReadLimit: parts.auth.checkRead,
    checkWriteLimit: parts.auth.checkWrite,
    stream: { signal: parts.signal, ...deps.overrides?.stream },
    maxStreamsPerCaller: config.api.maxStreamsPerCaller,
    forward: parts.forward,
    ...(parts.listenReplies === undefined ? {} : { listenReplies: parts.listenReplies }),
  });
}
