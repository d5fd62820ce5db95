/** What the CLI's serve and migrate commands run. */
import { ConfigError } from '../config/config-error.ts';
import type { ResolvedConfig } from '../config/resolve-config.ts';
import type { Logger } from '../log/logger.ts';
import { openDatabase } from '../store/database/database.ts';
import { databaseOptionsFromEnv } from '../store/database/database-options.ts';
import type { ServeTerminal } from '../terminal/serve-lines.ts';
import { startSwitchboard, type RunningSwitchboard } from './start-switchboard.ts';

export interface ServeOptions {
  config: ResolvedConfig;
  logger: Logger;
  host: string;
  port: number;
  out: (text: string) => void;
  /** Once it serves: the CLI prints where, what it serves and the first token (cli/startup-banner.ts). */
  onStarted?: (running: RunningSwitchboard) => Promise<void>;
  /** Resolves when the server should stop; default the first SIGINT or SIGTERM. */
  stopSignal?: Promise<unknown>;
  /** How the CLI is run here (cli/invocation.ts), for the UI's hints. */
  cliCommand?: string;
  /** On a terminal without --quiet: a line per event stored and per forward attempt. */
  terminal?: ServeTerminal;
}

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * Resolves on the first SIGINT or SIGTERM. The listeners stay installed until shutdown is over
 * (dispose): events.once() would remove its listener before the process's other listeners run, and
 * the embedded PostgreSQL's fallback handler (postgres/server-lifetime.ts onSignal) reads "no other
 * listener" as "nobody owns shutdown" — it then stopped the database under the draining server
 * and re-raised the signal, so in-flight deliveries failed and the exit was by signal, not 0.
 * A second signal during shutdown is only logged: shutdown is already bounded by the drain timeout.
 */
function stopSignals(logger: Logger): { stopped: Promise<NodeJS.Signals>; dispose(): void } {
  let received: NodeJS.Signals | undefined;
  let resolve: (signal: NodeJS.Signals) => void = () => undefined;
  const stopped = new Promise<NodeJS.Signals>((r) => {
    resolve = r;
  });
  const onSignal = (signal: NodeJS.Signals): void => {
    if (received !== undefined) {
      logger.warn({ signal }, 'already shutting down; waiting for in-flight requests (bounded by the drain timeout)');
      return;
    }
    received = signal;
    resolve(signal);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  return {
    stopped,
    dispose: () => {
      for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
    },
  };
}

/** SWITCHBOARD_DRAIN_TIMEOUT_MS: how long SIGTERM waits for in-flight requests; default 10 s. */
function drainTimeoutFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env.SWITCHBOARD_DRAIN_TIMEOUT_MS?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) > 600_000) {
    throw new ConfigError(
      `SWITCHBOARD_DRAIN_TIMEOUT_MS: ${JSON.stringify(raw)} is not a number of milliseconds (0 to 600000)`,
    );
  }
  return Number(raw);
}

export async function runServer(options: ServeOptions): Promise<number> {
  const { databaseUrl, dataDir } = databaseOptionsFromEnv();
  const drainTimeoutMs = drainTimeoutFromEnv();
  // Installed before start-up, so a signal during start-up is not lost either.
  const signals = stopSignals(options.logger);
  const stop = options.stopSignal ?? signals.stopped;
  try {
    return await serve(options, { databaseUrl, dataDir, drainTimeoutMs, stop });
  } finally {
    signals.dispose();
  }
}

async function serve(
  options: ServeOptions,
  setup: {
    databaseUrl: string | undefined;
    dataDir: string;
    drainTimeoutMs: number | undefined;
    stop: Promise<unknown>;
  },
): Promise<number> {
  const { databaseUrl, dataDir, stop } = setup;
  const running = await startSwitchboard({
    config: options.config,
    logger: options.logger,
    host: options.host,
    port: options.port,
    databaseUrl,
    dataDir,
    envToken: process.env.SWITCHBOARD_TOKEN || undefined,
    redisUrl: process.env.REDIS_URL || undefined,
    ...(setup.drainTimeoutMs === undefined ? {} : { drainTimeoutMs: setup.drainTimeoutMs }),
    ...(options.cliCommand === undefined ? {} : { cliCommand: options.cliCommand }),
    ...(options.terminal === undefined ? {} : { terminal: options.terminal }),
  });
  if (options.onStarted) await options.onStarted(running);
  else options.out(`switchboard listening on ${running.url}\n`);
  options.logger.info({ url: running.url, mcp: running.mcpUrl }, 'switchboard started');
  await stop;
  options.logger.info('shutting down');
  await running.close();
  options.logger.info('stopped');
  return 0;
}

export async function runMigrate(options: {
  config: ResolvedConfig;
  logger: Logger;
  out: (text: string) => void;
}): Promise<void> {
  const { databaseUrl, dataDir } = databaseOptionsFromEnv();
  const database = await openDatabase({
    databaseUrl,
    dataDir,
    logger: options.logger,
    migrate: true,
    partition: options.config.store.partition,
  });
  await database.close();
  options.out('migrations applied\n');
}
