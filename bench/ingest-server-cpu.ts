/**
 * The server's own CPU per stored webhook (issue 40), this checkout against another one, back to
 * back: each variant's switchboard (`bench/ingest.ts --serve switchboard`, the real composition
 * root with a signed GitHub provider) against a fresh database of its own, loaded in rotated
 * rounds by the same signed 2 KiB GitHub deliveries, at a fixed concurrency (closed loop) or at a
 * fixed rate (open loop, --rate). Per round: the server process's CPU from /proc per stored
 * delivery, p50 and p99 latency (paced: from each request's scheduled start), deliveries per
 * commit, and the hypervisor's steal.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/ingest-server-cpu.ts \
 *     --against /tmp/before [--requests 20000] [--rounds 4] [--connections 50] [--rate 1000]
 *     [--cpu-prof /tmp/prof] [--node-flags=--max-semi-space-size=64]
 *
 * Without --against it measures this checkout alone. --cpu-prof writes a V8 profile of each server
 * (summarise it with bench/cpu-profile-summary.ts); --node-flags gives this checkout's server Node
 * or V8 flags, to measure one. The other checkout needs this checkout's
 * node_modules (`ln -s "$PWD/node_modules" /tmp/before/`).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sign } from '@octokit/webhooks-methods';
import pg from 'pg';
import { Pool as HttpPool } from 'undici';
import { cpuTicks, processCpuSeconds, stealShare } from './cpu-ticks.ts';
import { githubPayload } from './github-payload.ts';

const SECRET = 'bench-github-secret';

const { values } = parseArgs({
  options: {
    against: { type: 'string' },
    requests: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '4' },
    connections: { type: 'string', default: '50' },
    rate: { type: 'string' },
    warm: { type: 'string', default: '3000' },
    'cpu-prof': { type: 'string' },
    // V8 or Node flags for this checkout's server only (e.g. --max-semi-space-size=64), to measure a flag.
    'node-flags': { type: 'string' },
  },
});

interface Variant {
  label: string;
  dir: string;
  child: ChildProcess;
  port: number;
  db: pg.Client;
  database: string;
  perStored: number[];
}

async function startVariant(label: string, dir: string, adminUrl: string, flags: string[]): Promise<Variant> {
  const name = `switchboard_servercpu_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8'`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const prof = values['cpu-prof'];
  const child = fork(path.join(dir, 'bench/ingest.ts'), ['--serve', 'switchboard', '--database-url', url.toString()], {
    cwd: dir,
    execArgv: ['--import', 'tsx', ...flags, ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${label} server exited with ${String(code)}`)));
    child.on('message', (message: unknown) => {
      const m = message as { type?: unknown; port?: unknown };
      if (m.type === 'ready' && typeof m.port === 'number') resolve(m.port);
    });
  });
  const db = new pg.Client({ connectionString: url.toString() });
  await db.connect();
  return { label, dir, child, port, db, database: name, perStored: [] };
}

/** Transactions the database committed so far (pg_stat_database lags by up to half a second). */
async function commits(db: pg.Client): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    'SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return Number(rows[0]?.n ?? 0);
}

async function stored(db: pg.Client): Promise<number> {
  const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM events');
  return Number(rows[0]?.n ?? 0);
}

/** `total` signed deliveries, closed loop at `connections` or open loop at `rate` a second. */
/** Milliseconds from each request's start (paced: its scheduled start) to its answer, of the last load. */
let latencies: number[] = [];

async function load(port: number, payload: Buffer, signed: Record<string, string>, total: number): Promise<number> {
  latencies = [];
  const connections = Number(values.connections);
  const http = new HttpPool(`http://127.0.0.1:${port}`, { connections: Math.max(connections, 128), pipelining: 1 });
  let ok = 0;
  const one = async (due = performance.now()): Promise<void> => {
    const response = await http.request({
      method: 'POST',
      path: '/hooks/github',
      headers: { ...signed, 'x-github-delivery': randomUUID() },
      body: payload,
    });
    await response.body.text();
    latencies.push(performance.now() - due);
    if (response.statusCode === 200) ok += 1;
  };
  if (values.rate === undefined) {
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < total) {
        next += 1;
        await one();
      }
    };
    await Promise.all(Array.from({ length: connections }, worker));
  } else {
    const intervalMs = 1000 / Number(values.rate);
    const start = performance.now();
    const inFlight: Promise<void>[] = [];
    for (let k = 0; k < total; k += 1) {
      const due = start + k * intervalMs;
      const wait = due - performance.now();
      if (wait > 1) await delay(wait);
      inFlight.push(one(due));
    }
    await Promise.all(inFlight);
  }
  await http.close();
  return ok;
}

async function main(): Promise<void> {
  const adminUrl = process.env['DATABASE_URL']?.trim();
  if (!adminUrl) throw new Error('DATABASE_URL is required');
  const here = path.resolve(fileURLToPath(import.meta.url), '../..');
  const payload = await githubPayload();
  // What every delivery carries but its id.
  const signed = {
    'content-type': 'application/json',
    'user-agent': 'GitHub-Hookshot/bench',
    'x-github-event': 'issues',
    'x-hub-signature-256': await sign(SECRET, payload.toString('utf8')),
  };
  const flags = values['node-flags']?.split(' ').filter((flag) => flag !== '') ?? [];
  const variants = [await startVariant('this', here, adminUrl, flags)];
  if (values.against) variants.push(await startVariant('against', path.resolve(values.against), adminUrl, []));
  try {
    for (const v of variants) await load(v.port, payload, signed, Number(values.warm));
    const requests = Number(values.requests);
    for (let round = 0; round < Number(values.rounds); round += 1) {
      for (let i = 0; i < variants.length; i += 1) {
        const v = variants[(i + round) % variants.length] as Variant;
        const pid = v.child.pid ?? 0;
        await delay(1100);
        const before = {
          cpu: processCpuSeconds(pid),
          rows: await stored(v.db),
          commits: await commits(v.db),
          ticks: cpuTicks(),
        };
        const ok = await load(v.port, payload, signed, requests);
        const rows = (await stored(v.db)) - before.rows;
        const cpu = processCpuSeconds(pid) - before.cpu;
        const steal = stealShare(before.ticks, cpuTicks()) ?? 0;
        await delay(1100);
        const perCommit = rows / Math.max(1, (await commits(v.db)) - before.commits);
        v.perStored.push((cpu * 1e6) / rows);
        latencies.sort((a, b) => a - b);
        const at = (p: number): string => (latencies[Math.floor((latencies.length - 1) * p)] ?? Number.NaN).toFixed(1);
        process.stdout.write(
          `round ${round + 1} ${v.label.padEnd(8)} ${String(ok).padStart(6)} ok ${String(rows).padStart(6)} stored ` +
            `server ${((cpu * 1e6) / rows).toFixed(0).padStart(4)} µs per stored, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, ${perCommit.toFixed(1)} stored a commit, ` +
            `steal ${(steal * 100).toFixed(1)} %\n`,
        );
      }
    }
    for (const v of variants) {
      const sorted = [...v.perStored].sort((a, b) => a - b);
      const median = sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN;
      process.stdout.write(
        `${v.label} (${v.dir}): median ${median.toFixed(0)} µs, all ${v.perStored.map((x) => x.toFixed(0)).join(' / ')}\n`,
      );
    }
  } finally {
    for (const v of variants) {
      await v.db.end();
      const exited = once(v.child, 'exit');
      v.child.send('stop');
      await Promise.race([exited, delay(15_000)]);
    }
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    for (const v of variants) await admin.query(`DROP DATABASE IF EXISTS ${v.database} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
