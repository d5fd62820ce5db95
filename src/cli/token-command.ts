/**
 * `switchboard token create <name> | list | revoke <name>`. The arguments are checked before the
 * database is touched. With the embedded PostgreSQL, a switchboard already serving this data
 * directory owns the cluster: the command connects to that server (postgres/running-record.ts)
 * instead of starting a second one on the same files.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { CliIo } from './cli-io.ts';
import { UsageError, type ParsedCommandLine } from './command-line.ts';

/** How long to wait for a switchboard that is starting on this data directory to serve its database. */
const RECORD_WAIT_MS = 60_000;

const ACTIONS = ['create', 'list', 'revoke'] as const;
type Action = (typeof ACTIONS)[number];

function checkArguments(positionals: readonly string[]): { action: Action; name: string | undefined } {
  const [action, name] = positionals;
  if (!ACTIONS.includes(action as Action)) {
    throw new UsageError(`token takes create <name>, list or revoke <name>, not ${JSON.stringify(action)}`, 'token');
  }
  if (action === 'list' && name !== undefined) throw new UsageError('token list takes no name', 'token');
  if (action !== 'list' && name === undefined) throw new UsageError(`token ${action} needs a <name>`, 'token');
  return { action: action as Action, name };
}

export async function runTokenCommand(parsed: ParsedCommandLine, io: CliIo): Promise<number> {
  const { action, name } = checkArguments(parsed.positionals);
  const [
    { createLogger },
    { openDatabase },
    { databaseOptionsFromEnv },
    { createTokenRepository },
    { runTokenCommand: run },
  ] = await Promise.all([
    import('../log/logger.ts'),
    import('../store/database/database.ts'),
    import('../store/database/database-options.ts'),
    import('../store/records/token-repository.ts'),
    import('../auth/token-commands.ts'),
  ]);
  // The token and the table go to stdout; log lines to stderr.
  const logger = createLogger({ level: io.env.LOG_LEVEL ?? 'warn', pretty: io.stderrIsTty, fd: 2 });
  const { databaseUrl, dataDir } = databaseOptionsFromEnv(io.env);
  const open = async () => {
    const running = databaseUrl === undefined ? await runningServerUrl(dataDir) : undefined;
    // A running server answers at once; only DATABASE_URL gets the usual wait for a booting database.
    return openDatabase({
      databaseUrl: databaseUrl ?? running,
      dataDir,
      logger,
      ...(running ? { startupTimeoutMs: 2_000 } : {}),
    });
  };
  // A server starting on this data directory holds its lock before its database is up and its
  // record written: wait for the record (bounded) rather than fail.
  const database = await open().catch(async (err: unknown) => {
    const { DataDirInUseError, LOCK_FILE_NAME } = await import('../postgres/data-dir-lock.ts');
    if (!(err instanceof DataDirInUseError)) throw err;
    const locked = (): boolean => existsSync(path.join(dataDir, LOCK_FILE_NAME));
    for (const deadline = Date.now() + RECORD_WAIT_MS; Date.now() < deadline && locked(); await delay(250)) {
      if ((await runningServerUrl(dataDir)) !== undefined) return open();
    }
    throw err;
  });
  try {
    return await run([action, ...(name === undefined ? [] : [name])], createTokenRepository(database.pool), {
      out: io.out,
      err: io.err,
    });
  } finally {
    await database.close();
  }
}

/** The embedded PostgreSQL of a switchboard serving this data directory, or undefined to start one. */
async function runningServerUrl(dataDir: string): Promise<string | undefined> {
  const { findRunningEmbedded } = await import('../postgres/running-record.ts');
  return (await findRunningEmbedded(dataDir))?.url;
}
