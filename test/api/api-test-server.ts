/**
 * A real switchboard for API and browser tests: createApp with the ingest, API and UI surfaces,
 * the real store on a fresh PostgreSQL database, the PostgreSQL event bus, the real replay
 * service, bearer tokens from the token table, listening on 127.0.0.1:0.
 */
import type { Server } from 'node:http';
import type { DatabasePool, Interceptor } from 'slonik';
import { createApiSurface } from '../../src/api/create-api-surface.ts';
import { createHostCheck } from '../../src/auth/host-check.ts';
import { createRateLimiter } from '../../src/auth/rate-limiter.ts';
import { requireBearer } from '../../src/auth/require-bearer.ts';
import { createTokenService } from '../../src/auth/token-service.ts';
import { createPostgresEventBus, type PostgresEventBus } from '../../src/bus/postgres-event-bus.ts';
import { parseConfig } from '../../src/config/load-config.ts';
import type { BucketConfig, ProviderConfig, ResolvedConfig } from '../../src/config/resolve-config.ts';
import { createApp } from '../../src/http/create-app.ts';
import { createIngestSurface } from '../../src/ingest/ingest-surface.ts';
import { createProviderDirectory } from '../../src/providers/provider-directory.ts';
import { createReplayService } from '../../src/replay/replay-service.ts';
import { forwardRuleMatcher } from '../../src/config/forward-rules.ts';
import { checkForwardTargets } from '../../src/forward/check-forward-targets.ts';
import { createForwardControl } from '../../src/forward/forward-control.ts';
import { startForwardDispatcher, type ForwardDispatcher } from '../../src/forward/forward-dispatcher.ts';
import { createOutbound } from '../../src/outbound/deliver-event.ts';
import {
  createDatabasePool,
  createDeliveryRepository,
  createEventStore,
  createReplayAttemptRepository,
  createTokenRepository,
  isDatabaseUp,
  type PgEventStore,
} from '../../src/store/index.ts';
import { createUiSurface } from '../../src/ui/create-ui-surface.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';
import { startControlledProxy, type ControlledProxy } from '../support/tcp-proxy.ts';
import { listenLocal } from '../support/local-server.ts';
import type { Logger } from '../../src/log/logger.ts';

export const GITHUB_SECRET = 'gh-test-secret';
export const CI_TOKEN = 'ci-shared-token';

/** Providers of every trust mode, so each badge can be produced; `extra` is appended as is. */
export function testConfigYaml(defaultTarget?: string, extra: readonly string[] = []): string {
  return [
    'providers:',
    '  github:',
    '    preset: github',
    `    secret: ${GITHUB_SECRET}`,
    '    record_rejected: true',
    '  ci:',
    '    trust_mode: token',
    `    token: ${CI_TOKEN}`,
    '    event_type_from: /type',
    '  hooks:',
    '    trust_mode: open',
    '    event_type_from: /type',
    '  orders:',
    '    family: queue',
    '    channel: orders',
    ...(defaultTarget ? ['replay:', `  default_target: ${defaultTarget}`] : []),
    ...extra,
    '',
  ].join('\n');
}

export interface ApiTestServerOptions {
  defaultTarget?: string;
  heartbeatMs?: number;
  maxBackfill?: number;
  readLimit?: BucketConfig;
  replayLimit?: BucketConfig;
  /** Where the UI surface finds its build (browser tests build into a temp dir). */
  uiDistDir?: string;
  /** Captures the SQL the store runs (for EXPLAIN). */
  interceptors?: readonly Interceptor[];
  /** Reach PostgreSQL through a TCP proxy the test can take down (database-down tests). */
  viaProxy?: boolean;
  /** More top-level config lines (YAML), e.g. `api: { max_streams_per_caller: 2 }`. */
  extraConfig?: readonly string[];
  /** Default: silent. */
  logger?: Logger;
  /** SWITCHBOARD_TOKEN: a token the server accepts as its own (caller name "env"). */
  envToken?: string;
}

export interface ApiTestServer {
  url: string;
  port: number;
  /** A valid bearer token (name "tester"). */
  token: string;
  db: TestDatabase;
  store: PgEventStore;
  bus: PostgresEventBus;
  config: ResolvedConfig;
  providers: readonly ProviderConfig[];
  server: Server;
  /** With viaProxy: cuts the server off from its database. */
  takeDatabaseDown(): Promise<void>;
  /** An extra token with its own name, for per-caller checks. */
  createToken(name: string): Promise<string>;
  close(): Promise<void>;
}

export async function startApiTestServer(options: ApiTestServerOptions = {}): Promise<ApiTestServer> {
  const db = await freshDatabase({ interceptors: options.interceptors ?? [] });
  const logger = options.logger ?? silentLogger;
  const config = parseConfig(testConfigYaml(options.defaultTarget, options.extraConfig), {});
  let proxy: ControlledProxy | undefined;
  let pool: DatabasePool = db.pool;
  if (options.viaProxy === true) {
    const direct = new URL(db.url);
    proxy = await startControlledProxy(direct.hostname, Number(direct.port || 5432));
    const proxied = new URL(db.url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    pool = await createDatabasePool(proxied.toString(), { maximumPoolSize: 3, connectionTimeoutMs: 1000 });
  }
  // Forward rules come in through extraConfig (a forward: block), wired as the composition root does.
  const forwardRulesFor = forwardRuleMatcher(config.forward);
  const store = createEventStore(pool, forwardRulesFor ? { forwardRulesFor } : {});
  const deliveries = createDeliveryRepository(pool);
  const attempts = createReplayAttemptRepository(pool);
  const tokens = createTokenRepository(pool);
  const { token } = await tokens.create('tester');
  const limiter = createRateLimiter({
    limits: {
      read: options.readLimit ?? { capacity: 10_000, refillPerSecond: 1000 },
      replay: options.replayLimit ?? { capacity: 1000, refillPerSecond: 100 },
    },
  });
  const bus = createPostgresEventBus({ databaseUrl: db.url, logger });
  await bus.ready();
  let port = 0;
  const outbound = createOutbound({
    providers: config.providers,
    allow: config.replay.allow,
    selfAddresses: () => [{ host: '127.0.0.1', port }],
    logger,
  });
  const replay = createReplayService({
    store,
    attempts,
    providers: config.providers,
    replay: config.replay,
    selfAddresses: () => [{ host: '127.0.0.1', port }],
    checkRateLimit: limiter.checkReplay,
    logger,
    outbound,
  });
  let dispatcher: ForwardDispatcher | undefined;
  const forward = createForwardControl({ rules: config.forward, deliveries, wake: (rule) => dispatcher?.wake(rule) });
  const shutdown = new AbortController();
  const app = createApp({
    logger,
    isDatabaseUp: () => isDatabaseUp(pool),
    trustProxy: false,
    surfaces: [
      createIngestSurface({ providers: config.providers, store, logger }),
      createApiSurface({
        store,
        replayAttempts: attempts,
        providers: createProviderDirectory(config.providers, () => 'connecting'),
        providerConfigs: config.providers,
        bus,
        replay,
        replayDefaultTarget: config.replay.defaultTarget,
        checkHost: createHostCheck({ bindHost: '127.0.0.1' }),
        authenticate: requireBearer(createTokenService({ tokens, envToken: options.envToken })),
        checkReadLimit: limiter.checkRead,
        maxStreamsPerCaller: config.api.maxStreamsPerCaller,
        forward,
        stream: {
          signal: shutdown.signal,
          ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
          ...(options.maxBackfill === undefined ? {} : { maxBackfill: options.maxBackfill }),
        },
      }),
      createUiSurface(options.uiDistDir === undefined ? {} : { distDir: options.uiDistDir }),
    ],
  });
  const listening = await listenLocal(app.callback());
  const { server } = listening;
  port = listening.port;
  if (config.forward.length > 0) {
    const targets = await checkForwardTargets(config.forward, {
      policy: outbound.policy,
      selfAddresses: [{ host: '127.0.0.1', port }],
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
    });
  }
  return {
    url: listening.origin,
    port,
    token,
    db,
    store,
    bus,
    config,
    providers: config.providers,
    server,
    takeDatabaseDown: async () => {
      if (!proxy) throw new Error('startApiTestServer: takeDatabaseDown needs viaProxy');
      await proxy.down();
    },
    createToken: async (name) => (await tokens.create(name)).token,
    close: async () => {
      shutdown.abort();
      await dispatcher?.stop(1_000);
      await outbound.close();
      await listening.close();
      await bus.close();
      if (pool !== db.pool) await pool.end().catch(() => undefined);
      await proxy?.close().catch(() => undefined);
      await db.close();
    },
  };
}
