/**
 * Forwarding benchmark: the real product (`switchboard serve`, a child process) forwarding to a
 * loopback consumer in this process. One run prints:
 *   1. ingest throughput with one forward rule against ingest with none (signed GitHub deliveries,
 *      closed loop), as a ratio — target ≥ 0.8;
 *   2. delivery lag at a fixed 200 events/s: from the event's received_at (stamped in the insert
 *      that commits it with its outbox row) to its arrival at the consumer, p50 and p99 — target
 *      p99 ≤ 250 ms;
 *      The same lag is also printed from the 2xx answer, which is sent only after the commit: the
 *      lag from the commit lies between the two;
 *   3. the backlog drain rate after a consumer outage: the consumer stops, load continues at the
 *      same rate for the outage, the consumer comes back on the same port, and the backlog's size
 *      over the time from its return to the last arrival is printed;
 *   4. what one delivery costs, measured rather than timed (robust on a loaded machine): with the
 *      rule paused, events queue up; then it is resumed and, over the drain, the switchboard
 *      process's CPU time (/proc/<pid>/stat) and the database's committed transactions
 *      (pg_stat_database.xact_commit, less the idle rate measured just before) are divided by the
 *      deliveries. Every dispatcher statement runs on its own, so transactions are its round trips.
 *
 *   npx tsx bench/forward.ts [--seconds 10] [--lag-seconds 20] [--outage-seconds 60] [--rate 200] [--cost-events 2000]
 *   npx tsx bench/forward.ts --seconds 3 --lag-seconds 5 --outage-seconds 5     # a short run
 *
 * DATABASE_URL's server is used when set (a database per server run, created and dropped);
 * otherwise an embedded PostgreSQL (default, durable settings) runs in a temp directory.
 */
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createLogger } from '../src/log/logger.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/postgres/embedded-postgres.ts';
import { randomToken, spawnSwitchboard, type SpawnedSwitchboard } from '../test/support/spawn-switchboard.ts';
import { percentile, runGithubLoad } from './load-driver.ts';

const { values: flags } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    'lag-seconds': { type: 'string', default: '20' },
    'outage-seconds': { type: 'string', default: '60' },
    rate: { type: 'string', default: '200' },
    connections: { type: 'string', default: '32' },
    concurrency: { type: 'string', default: '8' },
    'backoff-max-ms': { type: 'string', default: '5000' },
    'cost-events': { type: 'string', default: '2000' },
  },
});
const SECONDS = Number(flags.seconds);
const LAG_SECONDS = Number(flags['lag-seconds']);
const OUTAGE_SECONDS = Number(flags['outage-seconds']);
const RATE = Number(flags.rate);
const CONNECTIONS = Number(flags.connections);
const CONCURRENCY = Number(flags.concurrency);
const BACKOFF_MAX_MS = Number(flags['backoff-max-ms']);
const COST_EVENTS = Number(flags['cost-events']);
const WARM_UP_MS = 3_000;
const SECRET = 'bench-forward-secret';
const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
const out = (line: string): void => void process.stdout.write(`${line}\n`);
const nowMs = (): number => performance.timeOrigin + performance.now();

/** The loopback consumer: answers 200 and notes when each event first arrived (epoch ms). */
class Consumer {
  readonly arrivals = new Map<string, number>();
  requests = 0;
  private server: Server | undefined;
  port = 0;

  async start(port = 0): Promise<void> {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const id = String(req.headers['x-switchboard-replay'] ?? '');
        this.requests += 1;
        if (!this.arrivals.has(id)) this.arrivals.set(id, nowMs());
        res.end('ok');
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    this.server = undefined;
  }
}

interface BenchDatabases {
  create(): Promise<string>;
  close(): Promise<void>;
}

async function openDatabases(): Promise<BenchDatabases> {
  let base = process.env.DATABASE_URL?.trim();
  let embedded: { server: EmbeddedPostgres; dataDir: string } | undefined;
  if (!base) {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'switchboard-bench-forward-'));
    await chmod(dataDir, 0o755);
    const server = await startEmbeddedPostgres({ dataDir, logger });
    embedded = { server, dataDir };
    base = server.url;
  }
  const admin = base;
  const made: string[] = [];
  const run = async (statement: string): Promise<void> => {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  return {
    async create() {
      const name = `sb_bench_fwd_${Date.now().toString(36)}_${made.length}`;
      await run(`CREATE DATABASE ${name}`);
      made.push(name);
      const url = new URL(admin);
      url.pathname = `/${name}`;
      return url.toString();
    },
    async close() {
      for (const name of made) await run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      if (embedded) {
        await embedded.server.stop();
        await rm(embedded.dataDir, { recursive: true, force: true });
      }
    },
  };
}

function configFor(consumerPort: number | undefined): unknown {
  return {
    providers: { github: { preset: 'github', secret: SECRET } },
    ...(consumerPort === undefined
      ? {}
      : {
          forward: {
            'local-app': {
              to: `http://127.0.0.1:${consumerPort}/webhooks`,
              concurrency: CONCURRENCY,
              // The outage must not kill deliveries: the drain measures sending, not dead letters.
              max_attempts: 1000,
              backoff: { initial_ms: 1000, max_ms: BACKOFF_MAX_MS },
            },
          },
        }),
  };
}

async function withServer<T>(
  databases: BenchDatabases,
  consumerPort: number | undefined,
  work: (server: SpawnedSwitchboard, databaseUrl: string) => Promise<T>,
): Promise<T> {
  const databaseUrl = await databases.create();
  const server = await spawnSwitchboard({
    config: configFor(consumerPort),
    databaseUrl,
    token: randomToken(),
    logLevel: 'warn',
  });
  try {
    return await work(server, databaseUrl);
  } finally {
    await server.stop();
    server.cleanup();
  }
}

async function receivedAt(databaseUrl: string): Promise<Map<string, number>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string; ms: string }>(
      'SELECT id::text AS id, (extract(epoch FROM received_at) * 1000)::text AS ms FROM events',
    );
    return new Map(rows.map((row) => [row.id, Number(row.ms)]));
  } finally {
    await client.end();
  }
}

/** User + system CPU microseconds of a process so far (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMicros(pid: number): number {
  // Fields after the parenthesised command name; utime and stime are the 12th and 13th of them.
  const afterName = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1) ?? '';
  const fields = afterName.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** Transactions committed in the server's database so far (statistics flush within a second). */
async function committedTransactions(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(
      'SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()',
    );
    return Number(rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function forwardControl(server: SpawnedSwitchboard, action: 'pause' | 'resume'): Promise<void> {
  const response = await fetch(`${server.url}/api/forwards/local-app/${action}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.token ?? ''}` },
  });
  if (!response.ok) throw new Error(`${action} answered ${response.status}`);
}

/** Section 4: CPU and database transactions per delivery, over a drain of a paused backlog. */
async function costPerDelivery(server: SpawnedSwitchboard, databaseUrl: string, consumer: Consumer): Promise<void> {
  await forwardControl(server, 'pause');
  const load = await runGithubLoad({
    baseUrl: server.url,
    secret: SECRET,
    ratePerSecond: RATE,
    concurrency: 64,
    durationMs: (COST_EVENTS / RATE) * 1000,
  });
  const ids = load.outcomes.flatMap((o) => (o.status === 200 && o.id !== null ? [o.id] : []));
  // The idle rate (search indexer, gauges, these reads): subtracted from the drain's count.
  await sleep(2_000);
  const idleFrom = { at: nowMs(), xacts: await committedTransactions(databaseUrl) };
  await sleep(3_000);
  const idleTo = { at: nowMs(), xacts: await committedTransactions(databaseUrl) };
  const idlePerMs = (idleTo.xacts - idleFrom.xacts) / (idleTo.at - idleFrom.at);
  const before = { at: nowMs(), cpu: cpuMicros(server.pid), xacts: await committedTransactions(databaseUrl) };
  await forwardControl(server, 'resume');
  const drained = await waitUntil(() => ids.every((id) => consumer.arrivals.has(id)), 120_000);
  const cpuUsed = cpuMicros(server.pid) - before.cpu;
  const drainMs = nowMs() - before.at;
  await sleep(1_500); // Let the last statements' counters flush.
  const after = { at: nowMs(), xacts: await committedTransactions(databaseUrl) };
  const xacts = after.xacts - before.xacts - idlePerMs * (after.at - before.at);
  out(
    `cost per delivery (${ids.length} queued while paused, drained in ${(drainMs / 1000).toFixed(2)} s${drained ? '' : ', NOT ALL DELIVERED'}): ` +
      `${(cpuUsed / ids.length).toFixed(0)} µs CPU in the switchboard process, ` +
      `${(xacts / ids.length).toFixed(2)} database transactions (idle rate ${(idlePerMs * 1000).toFixed(1)}/s subtracted)`,
  );
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

async function ingestRound(server: SpawnedSwitchboard): Promise<number> {
  const report = await runGithubLoad({
    baseUrl: server.url,
    secret: SECRET,
    concurrency: CONNECTIONS,
    durationMs: SECONDS * 1000,
  });
  if (report.failed > 0 || report.non2xx > 0) out(`  (warning: ${report.failed} failed, ${report.non2xx} non-2xx)`);
  return report.throughput;
}

async function main(): Promise<void> {
  out(
    `forward bench: ingest ${SECONDS} s × 2 rounds each at ${CONNECTIONS} connections; lag ${LAG_SECONDS} s at ${RATE}/s; ` +
      `outage ${OUTAGE_SECONDS} s at ${RATE}/s; rule concurrency ${CONCURRENCY}, backoff 1000…${BACKOFF_MAX_MS} ms, max_attempts 1000`,
  );
  const databases = await openDatabases();
  const consumer = new Consumer();
  await consumer.start();
  try {
    // 1. Ingest with and without a rule, alternated so drift in the machine's load hits both.
    const none: number[] = [];
    const ruled: number[] = [];
    for (let round = 0; round < 2; round += 1) {
      none.push(await withServer(databases, undefined, ingestRound));
      ruled.push(await withServer(databases, consumer.port, ingestRound));
    }
    const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    out(`ingest, no rule:   ${mean(none).toFixed(0)} events/s (rounds ${none.map((x) => x.toFixed(0)).join(', ')})`);
    out(`ingest, one rule:  ${mean(ruled).toFixed(0)} events/s (rounds ${ruled.map((x) => x.toFixed(0)).join(', ')})`);
    out(`ingest ratio (one rule / none): ${(mean(ruled) / mean(none)).toFixed(2)} (target ≥ 0.8)`);

    // 2 and 3 on one server: lag with the consumer up, then the outage and the drain.
    await withServer(databases, consumer.port, async (server, databaseUrl) => {
      // Warm-up at the same rate, not measured: a server that has just started is still opening
      // its pools, its bus subscription and its first connection to the consumer.
      const warmUp = await runGithubLoad({
        baseUrl: server.url,
        secret: SECRET,
        ratePerSecond: RATE,
        concurrency: 64,
        durationMs: WARM_UP_MS,
      });
      const warmIds = warmUp.outcomes.flatMap((o) => (o.status === 200 && o.id !== null ? [o.id] : []));
      await waitUntil(() => warmIds.every((id) => consumer.arrivals.has(id)), 30_000);
      consumer.arrivals.clear();
      const lagLoad = await runGithubLoad({
        baseUrl: server.url,
        secret: SECRET,
        ratePerSecond: RATE,
        concurrency: 64,
        durationMs: LAG_SECONDS * 1000,
      });
      const lagIds = lagLoad.outcomes.flatMap((o) => (o.status === 200 && o.id !== null ? [o.id] : []));
      const allArrived = await waitUntil(() => lagIds.every((id) => consumer.arrivals.has(id)), 30_000);
      const stamps = await receivedAt(databaseUrl);
      const lags = lagIds
        .flatMap((id) => {
          const at = consumer.arrivals.get(id);
          const stored = stamps.get(id);
          return at === undefined || stored === undefined ? [] : [at - stored];
        })
        .sort((a, b) => a - b);
      out(
        `delivery lag at ${RATE}/s (${lags.length} of ${lagIds.length} events${allArrived ? '' : ', NOT ALL ARRIVED'}; ` +
          `sent ${lagLoad.ok} ok, ${lagLoad.skipped} skipped): p50 ${percentile(lags, 50).toFixed(1)} ms, ` +
          `p99 ${percentile(lags, 99).toFixed(1)} ms, max ${(lags.at(-1) ?? 0).toFixed(1)} ms (target p99 ≤ 250 ms)`,
      );
      // From the 2xx, which follows the commit: the lag from the commit is at least this.
      const fromAck = lagLoad.outcomes
        .flatMap((o) => {
          const at = o.status === 200 && o.id !== null ? consumer.arrivals.get(o.id) : undefined;
          return at === undefined ? [] : [at - (performance.timeOrigin + o.startedAt + o.latencyMs)];
        })
        .sort((a, b) => a - b);
      out(
        `delivery lag from the 2xx answer: p50 ${percentile(fromAck, 50).toFixed(1)} ms, ` +
          `p99 ${percentile(fromAck, 99).toFixed(1)} ms (the lag from the commit lies between this and the above)`,
      );

      const port = consumer.port;
      await consumer.stop();
      const outageLoad = await runGithubLoad({
        baseUrl: server.url,
        secret: SECRET,
        ratePerSecond: RATE,
        concurrency: 64,
        durationMs: OUTAGE_SECONDS * 1000,
      });
      const backlog = outageLoad.outcomes.flatMap((o) => (o.status === 200 && o.id !== null ? [o.id] : []));
      const back = nowMs();
      await consumer.start(port);
      const drained = await waitUntil(
        () => backlog.every((id) => consumer.arrivals.has(id)),
        Math.max(120_000, OUTAGE_SECONDS * 4000),
      );
      const last = Math.max(...backlog.map((id) => consumer.arrivals.get(id) ?? 0));
      const first = Math.min(...backlog.map((id) => consumer.arrivals.get(id) ?? Number.POSITIVE_INFINITY));
      const seconds = (last - back) / 1000;
      out(
        `backlog after a ${OUTAGE_SECONDS} s outage: ${backlog.length} events, first arrival ${((first - back) / 1000).toFixed(2)} s ` +
          `after the consumer returned, all ${drained ? '' : 'NOT '}delivered in ${seconds.toFixed(2)} s: ` +
          `drain rate ${(backlog.length / Math.max(seconds, 0.001)).toFixed(0)} events/s`,
      );

      await costPerDelivery(server, databaseUrl, consumer);
    });
  } finally {
    await consumer.stop();
    await databases.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `forward bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
