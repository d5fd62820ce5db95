/**
 * The composition root: the one place that knows every module, builds them in dependency order
 * (store, bus, sources, services, surfaces) and tears them down in reverse.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Middleware } from 'koa';
import type { ResolvedConfig } from '../config/resolve-config.ts';
import type { Logger } from '../log/logger.ts';
import { createApp } from '../http/create-app.ts';
import {
  createDeliveryRepository,
  createEventStore,
  createReplayAttemptRepository,
  createTokenRepository,
  isDatabaseUp,
  openDatabase,
  startRetention,
  startSearchIndexer,
  type Database,
} from '../store/index.ts';
import { createPostgresEventBus } from '../bus/postgres-event-bus.ts';
import { startQueueSources } from '../queue/queue-sources.ts';
import { createProviderDirectory } from '../providers/provider-directory.ts';
import {
  createHostCheck,
  createRateLimiter,
  createTokenService,
  ensureInitialToken,
  requireBearer,
  type InitialTokenResult,
} from '../auth/index.ts';
import { createReplayService } from '../replay/replay-service.ts';
import { forwardRuleMatcher } from '../config/forward-rules.ts';
import { createOutbound } from '../outbound/deliver-event.ts';
import type { SelfAddress } from '../outbound/target-policy/index.ts';
import { checkForwardTargets } from '../forward/check-forward-targets.ts';
import { createForwardControl } from '../forward/forward-control.ts';
import { startForwardDispatcher, type ForwardDispatcher } from '../forward/forward-dispatcher.ts';
import { createIngestSurface } from '../ingest/ingest-surface.ts';
import { createMcpSurface } from '../mcp/index.ts';
import { createApiSurface } from '../api/create-api-surface.ts';
import { createUiSurface } from '../ui/create-ui-surface.ts';
import { createMetrics, type Metrics } from '../metrics/metrics.ts';
import { metricsRoute, observeForwarding, observePool } from '../metrics/metrics-route.ts';
import { countRateLimited, countStreams, instrumentIngest, instrumentReplay } from '../metrics/instrument.ts';

export interface StartOptions {
  config: ResolvedConfig;
  logger: Logger;
  host: string;
  port: number;
  /** DATABASE_URL; undefined starts the embedded PostgreSQL in dataDir. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** SWITCHBOARD_TOKEN. */
  envToken: string | undefined;
  redisUrl: string | undefined;
  /** How long shutdown waits for in-flight requests before cutting connections. */
  drainTimeoutMs?: number;
  /** Share one metrics registry (tests); default a new one. */
  metrics?: Metrics;
  /** Override SERVER_TIMEOUTS (tests shorten them to watch slow clients being cut off). */
  serverTimeouts?: Partial<ServerTimeouts>;
  /** Where the built UI is; default the package's own (browser tests build a fresh one). */
  uiDistDir?: string;
}

export interface RunningSwitchboard {
  /** http://host:port, with the real port when 0 was asked for. */
  url: string;
  mcpUrl: string;
  initialToken: InitialTokenResult;
  database: Database;
  metrics: Metrics;
  /** Graceful: stop accepting, drain (bounded), close MCP sessions, sources, bus and database. */
  close(): Promise<void>;
}

export interface ServerTimeouts {
  /** Whole request head (request line and headers) must arrive within this. */
  headersTimeoutMs: number;
  /** Whole request, body included, must arrive within this. */
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /**
   * How often Node checks the two timeouts above. Node's default is 30 s, which would let a
   * slowloris client hold a socket for up to 40 s despite a 10 s headersTimeout.
   */
  checkIntervalMs: number;
}

/** Bounds that keep slow or idle clients (slowloris) from holding sockets for long. */
export const SERVER_TIMEOUTS: Readonly<ServerTimeouts> = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  checkIntervalMs: 1_000,
};

function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

async function listen(server: Server, host: string, port: number): Promise<AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address');
  return address;
}

export async function startSwitchboard(options: StartOptions): Promise<RunningSwitchboard> {
  const { config, logger } = options;
  const metrics = options.metrics ?? createMetrics();
  const cleanups: (() => Promise<void>)[] = [];
  const closeAll = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      await cleanup().catch((err: unknown) => logger.warn({ err }, 'error during shutdown'));
    }
  };

  try {
    const database = await openDatabase({ databaseUrl: options.databaseUrl, dataDir: options.dataDir, logger });
    cleanups.push(() => database.close());
    const { pool } = database;
    // The outbox: with forward rules, each stored event queues its deliveries in its own statement;
    // that same statement announces the new events on the live bus (store/announcement.ts).
    const forwardRulesFor = forwardRuleMatcher(config.forward);
    const store = createEventStore(pool, {
      ...(forwardRulesFor ? { forwardRulesFor } : {}),
    });
    const deliveries = createDeliveryRepository(pool);
    const tokens = createTokenRepository(pool);
    const attempts = createReplayAttemptRepository(pool);
    const initialToken = await ensureInitialToken({ tokens, dataDir: options.dataDir, envToken: options.envToken });

    const bus = createPostgresEventBus({ databaseUrl: database.url, logger });
    cleanups.push(() => bus.close());
    await bus.ready();

    const queues = startQueueSources({
      providers: config.providers,
      redisUrl: options.redisUrl,
      store,
      logger,
    });
    cleanups.push(() => queues.stop());

    const retention = startRetention({ pool, config: config.retention, logger });
    cleanups.push(() => retention.stop());

    const searchIndexer = startSearchIndexer({ pool, logger });
    cleanups.push(() => searchIndexer.stop());

    const directory = createProviderDirectory(config.providers, (name) => queues.connectionOf(name));
    const limiter = createRateLimiter({ limits: config.rateLimits });
    const checkRead = countRateLimited(limiter.checkRead, 'read', metrics);
    const checkReplay = countRateLimited(limiter.checkReplay, 'replay', metrics);
    const tokenService = createTokenService({ tokens, envToken: options.envToken, logger });
    cleanups.push(() => Promise.resolve(tokenService.close()));
    const authenticate = requireBearer(tokenService, { logger });
    const checkHost = createHostCheck({ bindHost: options.host, allowedHosts: config.server.allowedHosts });
    let selfAddresses: SelfAddress[] = [];
    // The one sending path: replay and forwarding both deliver through it.
    const outbound = createOutbound({
      providers: config.providers,
      allow: config.replay.allow,
      selfAddresses: () => selfAddresses,
      logger,
    });
    // Closed after the dispatcher stops (cleanups run in reverse): forwarding's kept connections.
    cleanups.push(() => outbound.close());
    const replay = instrumentReplay(
      createReplayService({
        store,
        attempts,
        providers: config.providers,
        replay: config.replay,
        selfAddresses: () => selfAddresses,
        checkRateLimit: checkReplay,
        logger,
        outbound,
      }),
      metrics,
    );
    let dispatcher: ForwardDispatcher | undefined;
    const forward = createForwardControl({
      rules: config.forward,
      deliveries,
      wake: (rule) => dispatcher?.wake(rule),
    });
    const mcp = createMcpSurface({
      store,
      providers: directory,
      replay,
      bus,
      checkReadLimit: checkRead,
      checkHost,
      authenticate,
      logger,
      sessions: config.mcp,
      replayDefaultTarget: config.replay.defaultTarget,
      replayRate: config.rateLimits.replay,
    });
    const streams = new AbortController();
    const surfaces: Middleware[] = [
      instrumentIngest(
        createIngestSurface({
          providers: config.providers,
          store,
          logger,
          onRejected: (provider, reason) => metrics.verificationFailures.inc({ provider, reason }),
          recordRejectedPerMinute: config.ingest.recordRejectedPerMinute,
          onRejectNotRecorded: (provider) => metrics.rejectedNotRecorded.inc({ provider }),
        }),
        config.providers,
        metrics,
      ),
      mcp.middleware,
      countStreams(metrics),
      createApiSurface({
        store,
        replayAttempts: attempts,
        providers: directory,
        providerConfigs: config.providers,
        bus,
        replay,
        replayDefaultTarget: config.replay.defaultTarget,
        checkHost,
        authenticate,
        checkReadLimit: checkRead,
        stream: { signal: streams.signal },
        maxStreamsPerCaller: config.api.maxStreamsPerCaller,
        forward,
      }),
      metricsRoute({ metrics, authenticate: config.metrics.requireAuth ? authenticate : undefined }),
      createUiSurface({ distDir: options.uiDistDir }),
    ];
    const stopObserving = observePool(metrics, pool, () => mcp.sessionCount());
    cleanups.push(() => Promise.resolve(stopObserving()));

    const app = createApp({
      logger,
      isDatabaseUp: () => isDatabaseUp(pool),
      trustProxy: config.server.trustProxy,
      surfaces,
    });
    const timeouts: ServerTimeouts = { ...SERVER_TIMEOUTS, ...options.serverTimeouts };
    // Koa answers every failure itself (the error handler), so nothing is left to await here.
    const handleRequest = app.callback();
    const server = createServer(
      {
        requestTimeout: timeouts.requestTimeoutMs,
        headersTimeout: timeouts.headersTimeoutMs,
        connectionsCheckingInterval: timeouts.checkIntervalMs,
      },
      (req, res) => void handleRequest(req, res),
    );
    server.keepAliveTimeout = timeouts.keepAliveTimeoutMs;
    const address = await listen(server, options.host, options.port);
    selfAddresses = [{ host: options.host, port: address.port }];
    const drainTimeoutMs = options.drainTimeoutMs ?? 10_000;
    let draining = false;
    const unanswered = new Set<ServerResponse>();
    // During the drain every answer says Connection: close (those already in progress too), so
    // keep-alive clients go elsewhere for their next request instead of holding this instance open.
    server.prependListener('request', (_req, res) => {
      if (draining) {
        res.setHeader('Connection', 'close');
        return;
      }
      unanswered.add(res);
      res.once('close', () => unanswered.delete(res));
    });
    cleanups.push(async () => {
      // Stop accepting first; MCP sessions and SSE streams never end on their own, so close them.
      draining = true;
      for (const res of unanswered) if (!res.headersSent) res.setHeader('Connection', 'close');
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // server.close() closes only the connections idle at that moment: one whose request ends
      // during the drain would otherwise stay open until keepAliveTimeout and delay the exit.
      server.closeIdleConnections();
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      streams.abort();
      await mcp.closeAll();
      const timer = setTimeout(() => server.closeAllConnections(), drainTimeoutMs);
      await closed;
      clearTimeout(timer);
      clearInterval(sweep);
    });

    if (config.forward.length > 0) {
      // Checked once the port is known, so a rule pointing at switchboard itself is refused (exit 2).
      const targets = await checkForwardTargets(config.forward, {
        policy: outbound.policy,
        selfAddresses,
        webhookRoutes: outbound.webhookRoutes,
        logger,
      });
      const running = startForwardDispatcher({
        rules: config.forward,
        targets,
        deliveries,
        outbound,
        subscribe: (listener) => bus.subscribe(() => listener()),
        logger,
        onAttempt: (rule, outcome, seconds) => {
          metrics.forwardDeliveries.inc({ rule, outcome });
          metrics.forwardAttemptDuration.observe({ rule }, seconds);
        },
      });
      dispatcher = running;
      // Stopped before the bus and the database close: attempts in flight finish or are released.
      cleanups.push(() => running.stop(drainTimeoutMs));
      const stopGauges = observeForwarding(metrics, () => deliveries.health(config.forward.map((rule) => rule.name)));
      cleanups.push(() => Promise.resolve(stopGauges()));
    }

    const url = `http://${urlHost(options.host)}:${address.port}`;
    return { url, mcpUrl: `${url}/mcp`, initialToken, database, metrics, close: closeAll };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
