/**
 * `switchboard data info | rm [--yes]`: where this project's data is and how big it is, and
 * removing its embedded PostgreSQL cluster, including one placed under
 * /var/lib/switchboard/clusters/ that would otherwise outlive the project directory.
 */
import path from 'node:path';
import type { CliIo } from './cli-io.ts';
import { UsageError, type ParsedCommandLine } from './command-line.ts';
import { commandHint } from './invocation.ts';

/** 47185920 → "45.0 MB". */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

async function modules() {
  const [files, running, store, auth, logRedact, banner] = await Promise.all([
    import('../postgres/cluster-files.ts'),
    import('../postgres/running-record.ts'),
    import('../store/database/database-options.ts'),
    import('../auth/ensure-initial-token.ts'),
    import('../log/redact-url.ts'),
    import('./startup-banner.ts'),
  ]);
  return { ...files, ...running, ...store, ...auth, ...logRedact, ...banner };
}

export async function runDataCommand(parsed: ParsedCommandLine, io: CliIo): Promise<number> {
  const [action] = parsed.positionals;
  if (action !== 'info' && action !== 'rm') {
    throw new UsageError(`data takes info or rm, not ${JSON.stringify(action)}`, 'data');
  }
  if (action === 'info' && parsed.values.yes === true) throw new UsageError('--yes goes with data rm', 'data');
  return action === 'info' ? info(io) : remove(io, parsed.values.yes === true);
}

async function info(io: CliIo): Promise<number> {
  const m = await modules();
  const { databaseUrl, dataDir } = m.databaseOptionsFromEnv(io.env);
  const place = await m.clusterPlace(dataDir);
  // Each file is looked at once: the data directory's size is the rest of it plus the cluster's.
  const [rest, clusterSize, running] = await Promise.all([
    m.diskUsage(dataDir, place.relocated ? undefined : place.clusterDir),
    m.diskUsage(place.clusterDir),
    m.findRunningEmbedded(dataDir),
  ]);
  const dirSize = rest === null ? null : rest + (place.relocated ? 0 : (clusterSize ?? 0));
  if (dirSize === null) {
    io.out(`data directory  ${dataDir}  (does not exist: nothing is stored here yet)\n`);
  } else {
    const lines = [
      `data directory  ${dataDir}  (${formatBytes(dirSize)}${place.relocated ? '' : ', the cluster included'})`,
      `cluster         ${place.clusterDir}  (${clusterSize === null ? 'not created yet' : formatBytes(clusterSize)})`,
    ];
    if (place.relocated) {
      lines.push(
        `                outside the data directory, where the postgres user can reach it (recorded in ${path.join(dataDir, 'postgres.location')})`,
      );
    }
    lines.push(`server          ${running === null ? 'not running' : `running (pid ${running.pid})`}`);
    io.out(`${lines.join('\n')}\n`);
  }
  if (databaseUrl !== undefined) {
    io.out(`DATABASE_URL    ${m.redactUrl(databaseUrl)}: the server stores events there, not in an embedded cluster\n`);
  }
  if (dirSize !== null) io.out(`\nTo remove the embedded cluster and every event in it: ${commandHint('data rm')}\n`);
  return 0;
}

async function confirm(io: CliIo, question: string): Promise<boolean> {
  const ask =
    io.ask ??
    (async (text: string) => {
      const { createInterface } = await import('node:readline/promises');
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        return await rl.question(text);
      } finally {
        rl.close();
      }
    });
  return /^y(es)?$/i.test((await ask(question)).trim());
}

async function remove(io: CliIo, yes: boolean): Promise<number> {
  const m = await modules();
  const { dataDir } = m.databaseOptionsFromEnv(io.env);
  const place = await m.clusterPlace(dataDir);
  const size = await m.diskUsage(place.home ?? place.clusterDir);
  if (size === null) {
    io.out(`no embedded cluster for ${dataDir}: nothing to remove\n`);
    return 0;
  }
  const running = await m.findRunningEmbedded(dataDir);
  if (running !== null) {
    io.err(`switchboard: a switchboard (pid ${running.pid}) is running on ${dataDir}; stop it first\n`);
    return 1;
  }
  if (!yes) {
    if (!io.stdinIsTty)
      throw new UsageError('data rm asks before it deletes: with no terminal to ask on, pass --yes', 'data');
    const question = `Remove the embedded cluster ${place.clusterDir} (${formatBytes(size)}), with every event stored in it? [y/N] `;
    if (!(await confirm(io, question))) {
      io.err('not removed\n');
      return 1;
    }
  }
  const removed = await m.removeCluster(dataDir, [m.TOKEN_FILE_NAME, m.TOKEN_UNSHOWN_FILE]);
  io.out(`removed ${formatBytes(size)}:\n${removed.map((file) => `  ${file}\n`).join('')}`);
  return 0;
}
