/**
 * The composed server (src/server/start-switchboard.ts) in this process, on a database of its
 * own, for tests of what the composition root wires together: metrics, limits, token revocation.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../src/config/load-config.ts';
import { startSwitchboard, type RunningSwitchboard } from '../../src/server/start-switchboard.ts';
import { createMigratedDatabase, silentLogger } from './database.ts';
import { LOOPBACK } from './local-server.ts';

export interface ComposedServer {
  running: RunningSwitchboard;
  /** The database's own URL (the server may reach it through databaseUrl()). */
  databaseUrl: string;
  close(): Promise<void>;
}

export async function startComposedServer(options: {
  /** switchboard.yaml text. */
  config: string;
  /** SWITCHBOARD_TOKEN; undefined runs on managed tokens only. */
  envToken: string | undefined;
  /** How the server reaches the database (a proxy, say); default directly. */
  databaseUrl?: (direct: string) => string;
  /** A freshly built UI (browser tests); default the package's own. */
  uiDistDir?: string;
}): Promise<ComposedServer> {
  // Already migrated: the server's start finds nothing pending, as on any restart. Its start on an
  // empty database is the CLI's, the reliability suite's and CI's package step's.
  const db = await createMigratedDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'sb-composed-'));
  try {
    const running = await startSwitchboard({
      config: parseConfig(options.config, {}),
      logger: silentLogger,
      host: LOOPBACK,
      port: 0,
      databaseUrl: options.databaseUrl?.(db.url) ?? db.url,
      dataDir,
      envToken: options.envToken,
      redisUrl: undefined,
      uiDistDir: options.uiDistDir,
    });
    return {
      running,
      databaseUrl: db.url,
      close: async () => {
        await running.close();
        await db.drop();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
}
