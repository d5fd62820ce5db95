/**
 * A real switchboard for API and browser tests: the product's wiring (buildSurfaces) on a fresh
 * PostgreSQL database, bearer tokens from the token table, listening on 127.0.0.1:0. No background
 * jobs of its own: queue providers show as connecting, and search indexing is the test's to run.
 */
import type { Server } from 'node:http';
import type { DatabasePool, Interceptor } from 'slonik';
import type { PostgresEventBus } from '../../src/bus/postgres-event-bus.ts';
import { parseConfig } from '../../src/config/load-config.ts';
import type { BucketConfig, ProviderConfig, ResolvedConfig } from '../../src/config/resolve-config.ts';
import type { Logger } from '../../src/log/logger.ts';
import { createDatabasePool } from '../../src/store/database/database.ts';
import type { PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';
import { serveSurfaces } from '../support/serve-surfaces.ts';
import { proxyInFrontOf, startControlledProxy, type ControlledProxy } from '../support/tcp-proxy.ts';

const GITHUB_SECRET = 'gh-test-secret';
export const CI_TOKEN = 'ci-shared-token';
/** The variable the test config reads the ci provider's token from (`token: ${SB_TEST_CI_TOKEN}`). */
export const CI_TOKEN_VARIABLE = 'SB_TEST_CI_TOKEN';

/** Providers of every trust mode, so each badge can be produced; `extra` is appended as is. */
function testConfigYaml(defaultTarget?: string, extra: readonly string[] = []): string {
  return [
    'providers:',
    '  github:',
    '    preset: github',
    `    secret: ${GITHUB_SECRET}`,
    '    record_rejected: true',
    '  ci:',
    '    trust_mode: token',
    `    token: \${${CI_TOKEN_VARIABLE}}`,
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
  writeLimit?: BucketConfig;
  /** Where the UI surface finds its build (browser tests build into a temp dir). */
  uiDistDir?: string;
  /** GET /api/config cli_command: how the UI's hints run the CLI (default the product's, switchboard). */
  cliCommand?: string;
  /** Captures the SQL the store runs (for EXPLAIN). */
  interceptors?: readonly Interceptor[];
  /** Reach PostgreSQL through a TCP proxy the test can take down (database-down tests). */
  viaProxy?: boolean;
  /** Reach PostgreSQL's LISTEN connection (the live bus) through a TCP proxy the test can hold. */
  busViaProxy?: boolean;
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
  /**
   * With busViaProxy: notifications committed from now on wait on their way to the server until
   * releaseBus(), as they do when the machine is loaded, but for as long as the test wants.
   */
  holdBus(): void;
  releaseBus(): void;
  /** An extra token with its own name, for per-caller checks. */
  createToken(name: string): Promise<string>;
  close(): Promise<void>;
}

export async function startApiTestServer(options: ApiTestServerOptions = {}): Promise<ApiTestServer> {
  const db = await freshDatabase({ interceptors: options.interceptors ?? [] });
  const logger = options.logger ?? silentLogger;
  const parsed = parseConfig(testConfigYaml(options.defaultTarget, options.extraConfig), {
    [CI_TOKEN_VARIABLE]: CI_TOKEN,
  });
  const config: ResolvedConfig = {
    ...parsed,
    rateLimits: {
      ...parsed.rateLimits,
      read: options.readLimit ?? { capacity: 10_000, refillPerSecond: 1000 },
      replay: options.replayLimit ?? { capacity: 1000, refillPerSecond: 100 },
      write: options.writeLimit ?? { capacity: 1000, refillPerSecond: 100 },
    },
  };
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
  const busProxy = options.busViaProxy === true ? await proxyInFrontOf(db.url) : undefined;
  const served = await serveSurfaces({
    config,
    logger,
    pool,
    // The bus keeps its own connection, straight to the database unless busViaProxy: viaProxy's
    // proxy is the pool's alone.
    databaseUrl: busProxy === undefined ? db.url : busProxy.via(db.url),
    envToken: options.envToken,
    ...(options.uiDistDir === undefined ? {} : { uiDistDir: options.uiDistDir }),
    ...(options.cliCommand === undefined ? {} : { cliCommand: options.cliCommand }),
    overrides: {
      withoutJobs: { queueConnection: 'connecting' },
      stream: {
        ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
        ...(options.maxBackfill === undefined ? {} : { maxBackfill: options.maxBackfill }),
      },
    },
  });
  const { surfaces } = served;
  const { token } = await surfaces.tokens.create('tester');
  return {
    url: served.url,
    port: served.port,
    token,
    db,
    store: surfaces.store,
    bus: surfaces.bus,
    config,
    providers: config.providers,
    server: served.server,
    takeDatabaseDown: async () => {
      if (!proxy) throw new Error('startApiTestServer: takeDatabaseDown needs viaProxy');
      await proxy.down();
    },
    holdBus: () => heldBus(busProxy).hold(),
    releaseBus: () => heldBus(busProxy).release(),
    createToken: async (name) => (await surfaces.tokens.create(name)).token,
    close: async () => {
      await served.close();
      if (pool !== db.pool) await pool.end().catch(() => undefined);
      await proxy?.close().catch(() => undefined);
      await busProxy?.close().catch(() => undefined);
      await db.close();
    },
  };
}

function heldBus(proxy: ControlledProxy | undefined): ControlledProxy {
  if (proxy === undefined) throw new Error('startApiTestServer: holding the bus needs busViaProxy');
  return proxy;
}
