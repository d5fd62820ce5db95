/**
 * Ctrl-C in a terminal sends SIGINT to the whole foreground process group. The embedded
 * PostgreSQL runs in a group of its own, so only switchboard receives it: switchboard drains and
 * stops PostgreSQL itself, nothing logs "FATAL: terminating connection due to administrator
 * command", and no postgres process outlives switchboard, whether it was stopped by Ctrl-C or by
 * a SIGTERM to its pid.
 */
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnSwitchboard, waitForExit, type SpawnedSwitchboard } from '../support/spawn-switchboard.ts';

/** pid, parent pid and process group of every process named postgres. */
async function postgresProcesses(): Promise<{ pid: number; ppid: number; pgid: number }[]> {
  const found: { pid: number; ppid: number; pgid: number }[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // pid (comm) state ppid pgrp …; comm may hold spaces, so split after its closing parenthesis.
    const close = stat.lastIndexOf(')');
    if (close < 0 || stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue;
    const [, ppid, pgid] = stat.slice(close + 2).split(' ');
    found.push({ pid: Number(entry), ppid: Number(ppid), pgid: Number(pgid) });
  }
  return found;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The postmaster switchboard started: its child called postgres. */
async function postmasterOf(server: SpawnedSwitchboard): Promise<{ pid: number; pgid: number }> {
  const [postmaster] = (await postgresProcesses()).filter((p) => p.ppid === server.pid);
  if (postmaster === undefined) throw new Error(`no postgres child of switchboard pid ${server.pid}`);
  return postmaster;
}

describe('the embedded PostgreSQL and signals', () => {
  const made: string[] = [];
  const servers: SpawnedSwitchboard[] = [];
  afterAll(async () => {
    // A failed expectation leaves its server running: stop it (SIGTERM stops its PostgreSQL too).
    for (const server of servers) if (server.isRunning()) await server.stop();
    for (const dir of made) await rm(dir, { recursive: true, force: true });
  });

  it('Ctrl-C stops switchboard, which stops PostgreSQL without a FATAL line; SIGTERM leaves no postgres either', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'sb-pg-signals-'));
    made.push(dataDir);
    // Reachable by the postgres user when this runs as root, so the cluster stays in the data directory.
    await chmod(dataDir, 0o755);
    const start = async () => {
      const server = await spawnSwitchboard({
        config: { providers: { sandbox: { trust_mode: 'open' } } },
        databaseUrl: null,
        dataDir,
        logLevel: 'info',
        processGroup: true,
        startTimeoutMs: 120_000,
      });
      servers.push(server);
      return server;
    };

    const first = await start();
    const postmaster = await postmasterOf(first);
    // Its own group: a signal to switchboard's group (pgid = switchboard's pid) does not reach it.
    expect(first.pid).not.toBe(postmaster.pid);
    expect(postmaster.pgid).not.toBe(first.pid);
    // Open pooled connections, as a running server has.
    const res = await fetch(`${first.url}/hooks/sandbox`, { method: 'POST', body: '{"type":"ping"}' });
    expect(res.status).toBe(200);
    // What a terminal does on Ctrl-C: SIGINT to every process of the foreground group.
    process.kill(-first.pid, 'SIGINT');
    expect((await waitForExit(first, 60_000)).code).toBe(0);
    expect(first.output()).not.toMatch(/FATAL/);
    expect(first.output()).toMatch(/embedded PostgreSQL stopped/);
    expect(alive(postmaster.pid)).toBe(false);
    first.cleanup();

    const second = await start();
    const again = await postmasterOf(second);
    second.kill('SIGTERM');
    expect((await waitForExit(second, 60_000)).code).toBe(0);
    expect(second.output()).not.toMatch(/FATAL/);
    expect(alive(again.pid)).toBe(false);
    expect((await postgresProcesses()).filter((p) => p.pid === again.pid || p.ppid === again.pid)).toEqual([]);
    second.cleanup();
  }, 300_000);
});
