/**
 * The product's start-up: open the database, make sure a first token exists, build every part
 * (build-surfaces.ts), listen (http/http-server.ts), then start what needs the port. Shutdown runs
 * the other way: forwarding stops, the server drains, the parts close, the database last.
 */
import type { ResolvedConfig } from '../config/resolve-config.ts';
import type { Logger } from '../log/logger.ts';
import { listenHttp, type ServerTimeouts } from '../http/http-server.ts';
import { ensurePortFree } from '../http/port-in-use.ts';
import { openDatabase, type Database } from '../store/database/database.ts';
import { ensureInitialToken, type InitialTokenResult } from '../auth/ensure-initial-token.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { ServeTerminal } from '../terminal/serve-lines.ts';
import { buildSurfaces } from './build-surfaces.ts';

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
  uiDistDir?: string | undefined;
  /** How the CLI is run here, for the UI's hints; default `switchboard`. */
  cliCommand?: string | undefined;
  /** A line per event stored and per forward attempt (serve on a terminal); none when absent. */
  terminal?: ServeTerminal | undefined;
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

const DEFAULT_DRAIN_TIMEOUT_MS = 10_000;

export async function startSwitchboard(options: StartOptions): Promise<RunningSwitchboard> {
  const { config, logger } = options;
  const drainTimeoutMs = options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  const cleanups: (() => Promise<void>)[] = [];
  const closeAll = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      await cleanup().catch((err: unknown) => logger.warn({ err }, 'error during shutdown'));
    }
  };

  try {
    // Before the database: starting PostgreSQL and migrating take seconds, all lost on a busy port.
    await ensurePortFree(options.host, options.port);
    const database = await openDatabase({
      databaseUrl: options.databaseUrl,
      dataDir: options.dataDir,
      logger,
      partition: config.store.partition,
    });
    cleanups.push(() => database.close());
    const surfaces = await buildSurfaces({
      config,
      logger,
      pool: database.pool,
      databaseUrl: database.url,
      bindHost: options.host,
      envToken: options.envToken,
      redisUrl: options.redisUrl,
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...(options.uiDistDir === undefined ? {} : { uiDistDir: options.uiDistDir }),
      ...(options.cliCommand === undefined ? {} : { cliCommand: options.cliCommand }),
      ...(options.terminal === undefined ? {} : { terminal: options.terminal }),
    });
    cleanups.push(() => surfaces.close(drainTimeoutMs));
    const initialToken = await ensureInitialToken({
      tokens: surfaces.tokens,
      dataDir: options.dataDir,
      envToken: options.envToken,
    });

    // Koa answers every failure itself (the error handler), so nothing is left to await here.
    const handleRequest = surfaces.app.callback();
    const http = await listenHttp((req, res) => void handleRequest(req, res), {
      host: options.host,
      port: options.port,
      ...(options.serverTimeouts ? { timeouts: options.serverTimeouts } : {}),
    });
    cleanups.push(() => http.drain({ timeoutMs: drainTimeoutMs, onDraining: () => surfaces.endStreams() }));
    // Forwarding stops before the drain, as it started after the listen: attempts in flight finish
    // or are released while the bus and the database are still there.
    cleanups.push(() => surfaces.stopForwarding(drainTimeoutMs));
    await surfaces.listening({ host: options.host, port: http.port });

    return {
      url: http.url,
      mcpUrl: `${http.url}/mcp`,
      initialToken,
      database,
      metrics: surfaces.metrics,
      close: closeAll,
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
