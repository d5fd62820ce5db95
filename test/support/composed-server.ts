/**
 * The one way a test starts switchboard in its own process: the composition root
 * (src/server/start-switchboard.ts) on 127.0.0.1 port 0, with a data directory of its own and a
 * database of its own unless the test brings one. Tests of one part over a pool they already have
 * use serveSurfaces (the same wiring without the database and process parts); a child process is
 * spawn-switchboard.ts's.
 * No vitest import at load: bench/ reaches this through the fuzz target.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SwitchboardConfig } from '../../generated/types.ts';
import { parseConfig } from '../../src/config/load-config.ts';
import { resolveConfig } from '../../src/config/resolve-config.ts';
import type { ServerTimeouts } from '../../src/http/http-server.ts';
import { createLogger, type Logger } from '../../src/log/logger.ts';
import { startSwitchboard, type RunningSwitchboard } from '../../src/server/start-switchboard.ts';
import { LOOPBACK } from './local-server.ts';

export interface ComposedServer {
  running: RunningSwitchboard;
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  /** The URL the server was given for its database. */
  databaseUrl: string;
  /** Stops the server, then drops the database it made and removes its data directory. */
  close(): Promise<void>;
}

export interface ComposedServerOptions {
  /** switchboard.yaml text, or the config as an object. */
  config: string | SwitchboardConfig;
  /** SWITCHBOARD_TOKEN; undefined runs on managed tokens only. */
  envToken: string | undefined;
  /**
   * The database: a migrated one of its own (the default: the start finds nothing pending, as on
   * any restart), an empty one of its own (the start migrates it), or one the test owns (its URL,
   * through a proxy say), which close() leaves alone.
   */
  database?: 'migrated' | 'empty' | { url: string };
  /** Default 0, a free port. */
  port?: number;
  /** Default silent. */
  logger?: Logger;
  drainTimeoutMs?: number;
  serverTimeouts?: Partial<ServerTimeouts>;
  /** A freshly built UI (browser tests); default the package's own. */
  uiDistDir?: string;
}

async function databaseFor(choice: ComposedServerOptions['database']): Promise<{ url: string; drop(): Promise<void> }> {
  if (typeof choice === 'object') return { url: choice.url, drop: async () => undefined };
  // Loaded here, not at the top: database.ts reads the test run's settings through vitest.
  const { createEmptyDatabase, createMigratedDatabase } = await import('./database.ts');
  return choice === 'empty' ? createEmptyDatabase() : createMigratedDatabase();
}

export async function startComposedServer(options: ComposedServerOptions): Promise<ComposedServer> {
  const db = await databaseFor(options.database);
  // Only read for the embedded database and the first-start token file.
  const dataDir = await mkdtemp(join(tmpdir(), 'sb-composed-'));
  const cleanUp = async (): Promise<void> => {
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const running = await startSwitchboard({
      config: typeof options.config === 'string' ? parseConfig(options.config, {}) : resolveConfig(options.config),
      logger: options.logger ?? createLogger({ level: 'silent' }),
      host: LOOPBACK,
      port: options.port ?? 0,
      databaseUrl: db.url,
      dataDir,
      envToken: options.envToken,
      redisUrl: undefined,
      uiDistDir: options.uiDistDir,
      ...(options.drainTimeoutMs === undefined ? {} : { drainTimeoutMs: options.drainTimeoutMs }),
      ...(options.serverTimeouts === undefined ? {} : { serverTimeouts: options.serverTimeouts }),
    });
    return {
      running,
      url: running.url,
      port: Number(new URL(running.url).port),
      databaseUrl: db.url,
      close: async () => {
        await running.close();
        await cleanUp();
      },
    };
  } catch (err) {
    await cleanUp();
    throw err;
  }
}
