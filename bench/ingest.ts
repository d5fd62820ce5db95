/**
 * Ingest benchmark: switchboard's real ingest path (Koa app + ingest surface + PostgreSQL store
 * with durable commits + NOTIFY bus) against a bare Koa endpoint that answers 200, same machine,
 * same run, same load generator.
 *
 *   npx tsx bench/ingest.ts [--seconds 10] [--connections 50] [--rate 1000]
 *
 * DATABASE_URL is used when set (a fresh database is created on that server and dropped after,
 * when the user may CREATE DATABASE); otherwise an embedded PostgreSQL with default (durable)
 * settings runs in a temp directory. The servers run in a child process so that autocannon, in
 * this process, does not share their event loop.
 *
 * Targets: switchboard/bare ≥ 0.5 at 50 connections; p99 ≤ 25 ms at a fixed 1,000 req/s, sent evenly
 * paced by bench/load-driver.ts (autocannon's own rate option sends each second's requests in one
 * burst; that figure is printed too).
 *
 * To show where the time goes, a third endpoint runs the same app and ingest surface over a store
 * that acknowledges without storing anything: the ceiling any database could leave. On Linux the
 * CPU time each phase cost per request is printed too, split into the load generator (this
 * process), the servers' process and PostgreSQL.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sign } from '@octokit/webhooks-methods';
import Koa from 'koa';
import { createPool, sql } from 'slonik';
import { v7 as uuidv7 } from 'uuid';
import { cpuTicks, stealShare } from './cpu-ticks.ts';
import type { EventBus } from '../src/bus/event-bus.ts';
import { createPostgresEventBus } from '../src/bus/postgres-event-bus.ts';
import { resolveConfig } from '../src/config/resolve-config.ts';
import { createApp } from '../src/http/create-app.ts';
import { createIngestSurface } from '../src/ingest/ingest-surface.ts';
import { createLogger } from '../src/log/logger.ts';
import { createDatabasePool, isDatabaseUp } from '../src/store/database.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/store/embedded-postgres.ts';
import { migrate } from '../src/store/migrate.ts';
import type { EventStore, InsertResult, NewEvent } from '../src/store/event-store.ts';
import { createEventStore } from '../src/store/pg-event-store.ts';
import { startSearchIndexer, type SearchIndexer } from '../src/store/search-indexer.ts';
import { runGithubLoad } from './load-driver.ts';

const SECRET = 'bench-github-secret';
const PAYLOAD_BYTES = 2048;

// ---------------------------------------------------------------------------------------------
// autocannon has no type declarations; this is the part of its API the benchmark uses.

interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number; max: number };
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
  duration: number;
}

interface AutocannonOptions {
  url: string;
  connections: number;
  duration: number;
  method: 'POST';
  headers: Record<string, string>;
  body: Buffer;
  idReplacement: boolean;
  overallRate?: number;
}

type Autocannon = (options: AutocannonOptions) => Promise<AutocannonResult>;

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

// ---------------------------------------------------------------------------------------------
// Server side (child process).

interface ServerReady {
  type: 'ready';
  barePort: number;
  switchboardPort: number;
  withoutDatabasePort: number;
  synchronousCommit: string;
  fsync: string;
  database: string;
}

interface CountReply {
  type: 'count';
  rows: number;
}

interface IndexerReply {
  type: 'indexer';
  running: boolean;
}

/**
 * Acknowledges every delivery at once and keeps nothing: only for the ceiling endpoint, which
 * measures what the HTTP, verification and group-commit path costs with no database behind it.
 */
function discardingStore(): EventStore {
  const acknowledge = (event: NewEvent): InsertResult => ({
    duplicate: false,
    event: {
      id: uuidv7(),
      provider: event.provider,
      event_type: event.eventType,
      trust_mode: event.trustMode,
      verified: event.verified,
      payload_size: event.payload.length,
      received_at: new Date().toISOString(),
    },
  });
  const notKept = async (): Promise<never> => {
    throw new Error('the discarding store keeps no events');
  };
  return {
    insert: async (event) => acknowledge(event),
    insertMany: async (events) => events.map(acknowledge),
    get: notKept,
    list: notKept,
    listWithSummaries: notKept,
    providerHasEvents: notKept,
    summaries: notKept,
    recordResponseStatus: notKept,
  };
}

const silentBus: EventBus = {
  publish: async () => undefined,
  subscribe: () => () => undefined,
  close: async () => undefined,
};

async function serve(): Promise<void> {
  const logger = createLogger({ level: process.env['LOG_LEVEL'] ?? 'warn' });
  const { url, cleanup, label } = await benchDatabase(logger);
  const pool = await createDatabasePool(url, { maximumPoolSize: 10 });
  await migrate(pool, logger);
  const synchronousCommit = String(await pool.oneFirst(sql.unsafe`SHOW synchronous_commit`));
  const fsync = String(await pool.oneFirst(sql.unsafe`SHOW fsync`));

  const store = createEventStore(pool);
  // As in production: payload search is indexed in the background while deliveries arrive. It is
  // stopped while the bare endpoint is measured: with no new events it would work through the
  // backlog at full speed and take CPU from the baseline, flattering the ratio.
  let searchIndexer: SearchIndexer | null = startSearchIndexer({ pool, logger });
  const bus = createPostgresEventBus({ databaseUrl: url, logger });
  await bus.ready();
  const providers = resolveConfig({ providers: { github: { preset: 'github', secret: SECRET } } }).providers;
  const switchboard = createApp({
    logger,
    isDatabaseUp: () => isDatabaseUp(pool),
    trustProxy: false,
    surfaces: [createIngestSurface({ providers, store, bus, logger })],
  });
  const withoutDatabase = createApp({
    logger,
    isDatabaseUp: async () => true,
    trustProxy: false,
    surfaces: [createIngestSurface({ providers, store: discardingStore(), bus: silentBus, logger })],
  });

  const bare = new Koa();
  bare.use((ctx) => {
    ctx.status = 200;
  });

  const listen = async (handler: Parameters<typeof createServer>[1]): Promise<Server> => {
    const server = createServer(handler);
    server.keepAliveTimeout = 60_000;
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return server;
  };
  const bareServer = await listen(bare.callback());
  const switchboardServer = await listen(switchboard.callback());
  const withoutDatabaseServer = await listen(withoutDatabase.callback());

  const send = (message: ServerReady | CountReply | IndexerReply): void => {
    process.send?.(message);
  };
  process.on('message', (message: unknown) => {
    void (async () => {
      if (message === 'count') {
        send({ type: 'count', rows: Number(await pool.oneFirst(sql.unsafe`SELECT count(*) FROM events`)) });
      } else if (message === 'indexer-off' || message === 'indexer-on') {
        await searchIndexer?.stop();
        searchIndexer = message === 'indexer-on' ? startSearchIndexer({ pool, logger }) : null;
        send({ type: 'indexer', running: searchIndexer !== null });
      } else if (message === 'stop') {
        for (const server of [bareServer, switchboardServer, withoutDatabaseServer]) {
          server.closeAllConnections();
          server.close();
        }
        await bus.close();
        await searchIndexer?.stop();
        await pool.end();
        await cleanup();
        process.exit(0);
      }
    })();
  });
  send({
    type: 'ready',
    barePort: (bareServer.address() as AddressInfo).port,
    switchboardPort: (switchboardServer.address() as AddressInfo).port,
    withoutDatabasePort: (withoutDatabaseServer.address() as AddressInfo).port,
    synchronousCommit,
    fsync,
    database: label,
  });
}

async function benchDatabase(
  logger: ReturnType<typeof createLogger>,
): Promise<{ url: string; label: string; cleanup: () => Promise<void> }> {
  const external = process.env['DATABASE_URL']?.trim();
  if (external) {
    const name = `switchboard_bench_${randomBytes(4).toString('hex')}`;
    const admin = await createPool(external, { maximumPoolSize: 1 });
    try {
      await admin.query(sql.unsafe`CREATE DATABASE ${sql.identifier([name])}`);
    } catch {
      await admin.end();
      // No CREATE DATABASE privilege: use the given database itself.
      return { url: external, label: 'DATABASE_URL', cleanup: async () => undefined };
    }
    await admin.end();
    const url = new URL(external);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      label: `DATABASE_URL (fresh database ${name})`,
      cleanup: async () => {
        const drop = await createPool(external, { maximumPoolSize: 1 });
        await drop.query(sql.unsafe`DROP DATABASE IF EXISTS ${sql.identifier([name])} WITH (FORCE)`);
        await drop.end();
      },
    };
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), 'switchboard-bench-'));
  const { chmod } = await import('node:fs/promises');
  await chmod(dataDir, 0o755);
  const server: EmbeddedPostgres = await startEmbeddedPostgres({ dataDir, logger });
  return {
    url: server.url,
    label: 'embedded PostgreSQL (default settings)',
    cleanup: async () => {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Load side (parent process).

async function githubPayload(): Promise<Buffer> {
  const sample = JSON.parse(
    await readFile(new URL('../src/presets/samples/github-issues.json', import.meta.url), 'utf8'),
  ) as { issue: { body: string; assignees?: unknown } };
  // A real issues.opened delivery (without the assignee list), padded through the issue body so
  // the compact JSON is exactly 2 KiB.
  delete sample.issue.assignees;
  sample.issue.body = '';
  const base = Buffer.byteLength(JSON.stringify(sample));
  if (base > PAYLOAD_BYTES) throw new Error(`sample is ${base} bytes before padding`);
  sample.issue.body = 'x'.repeat(PAYLOAD_BYTES - base);
  const payload = Buffer.from(JSON.stringify(sample));
  if (payload.length !== PAYLOAD_BYTES) throw new Error(`payload is ${payload.length} bytes`);
  return payload;
}

function waitFor<T extends { type: string }>(child: ChildProcess, type: T['type']): Promise<T> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`server process exited with ${String(code)}`));
    const onMessage = (message: unknown): void => {
      if (typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type) {
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(message as T);
      }
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Several runs as one: rates weighted by duration, latencies from the worst round (conservative). */
function combine(results: readonly AutocannonResult[]): AutocannonResult {
  const sum = (pick: (r: AutocannonResult) => number): number => results.reduce((total, r) => total + pick(r), 0);
  const duration = sum((r) => r.duration);
  const total = sum((r) => r.requests.total);
  const worst = (pick: (r: AutocannonResult) => number): number => Math.max(...results.map(pick));
  return {
    requests: { average: total / duration, total },
    latency: {
      p50: worst((r) => r.latency.p50),
      p99: worst((r) => r.latency.p99),
      average: sum((r) => r.latency.average * r.duration) / duration,
      max: worst((r) => r.latency.max),
    },
    '2xx': sum((r) => r['2xx']),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    duration,
  };
}

/** Linux reports process times in USER_HZ, which is 100 on every architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) of one process, from /proc/<pid>/stat; 0 once it is gone. */
function processCpuSeconds(pid: number): number {
  try {
    // The command name may contain spaces and parentheses; the fields after its closing ") " do not.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** Every PostgreSQL process on this machine: the embedded cluster's, or a local DATABASE_URL server's. */
function postgresCpuSeconds(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') total += processCpuSeconds(Number(entry));
    } catch {
      // The process ended while being listed.
    }
  }
  return total;
}

interface CpuSplit {
  loadGenerator: number;
  server: number;
  postgres: number;
  machine: number;
}

/** CPU seconds so far, split by process; undefined where /proc is missing. */
function cpuSplit(serverPid: number): CpuSplit | undefined {
  const ticks = cpuTicks();
  if (!ticks) return undefined;
  return {
    loadGenerator: processCpuSeconds(process.pid),
    server: processCpuSeconds(serverPid),
    postgres: postgresCpuSeconds(),
    machine: ticks.busy / CLOCK_TICKS_PER_SECOND,
  };
}

function addSplit(
  total: CpuSplit | undefined,
  before: CpuSplit | undefined,
  after: CpuSplit | undefined,
): CpuSplit | undefined {
  if (!before || !after) return undefined;
  const base = total ?? { loadGenerator: 0, server: 0, postgres: 0, machine: 0 };
  return {
    loadGenerator: base.loadGenerator + after.loadGenerator - before.loadGenerator,
    server: base.server + after.server - before.server,
    postgres: base.postgres + after.postgres - before.postgres,
    machine: base.machine + after.machine - before.machine,
  };
}

const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      serve: { type: 'boolean', default: false },
      seconds: { type: 'string', default: '10' },
      connections: { type: 'string', default: '50' },
      rate: { type: 'string', default: '1000' },
      rounds: { type: 'string', default: '2' },
    },
  });
  if (values.serve) return serve();
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  const rate = Number(values.rate);
  const rounds = Math.max(1, Number(values.rounds));

  const child = fork(fileURLToPath(import.meta.url), ['--serve'], {
    // BENCH_CPU_PROF=<dir> writes a V8 CPU profile of the server process there, to see where time goes.
    execArgv: [
      '--import',
      'tsx',
      ...(process.env['BENCH_CPU_PROF'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['BENCH_CPU_PROF']}`] : []),
    ],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const ready = await waitFor<ServerReady>(child, 'ready');
    const payload = await githubPayload();
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/bench',
      'x-github-event': 'issues',
      // autocannon replaces [<id>] with a fresh id per request, so nothing is deduplicated.
      'x-github-delivery': '[<id>]',
      'x-hub-signature-256': await sign(SECRET, payload.toString()),
    };
    const run = (port: number, pathName: string, duration: number, overallRate?: number): Promise<AutocannonResult> =>
      autocannon({
        url: `http://127.0.0.1:${port}${pathName}`,
        connections,
        duration,
        method: 'POST',
        headers,
        body: payload,
        idReplacement: true,
        ...(overallRate === undefined ? {} : { overallRate }),
      });

    process.stdout.write(
      `database: ${ready.database}; synchronous_commit=${ready.synchronousCommit}, fsync=${ready.fsync}\n` +
        `load: autocannon, ${connections} connections, ${PAYLOAD_BYTES}-byte signed GitHub payloads, ${seconds} s per phase ` +
        `(throughput phases alternate in ${rounds} rounds)\n\n`,
    );

    // On a virtual machine the host can take CPU time away (steal); a run with much of it measures
    // the host's neighbours as much as switchboard, so it is printed with the figures.
    const ticksBefore = cpuTicks();
    // The endpoints without a database run with the indexer stopped too: it would otherwise work
    // through the backlog of the switchboard phases on the CPU they are measured on.
    const withoutIndexer = async (port: number, pathName: string, duration: number): Promise<AutocannonResult> => {
      child.send('indexer-off');
      await waitFor<IndexerReply>(child, 'indexer');
      try {
        return await run(port, pathName, duration);
      } finally {
        child.send('indexer-on');
        await waitFor<IndexerReply>(child, 'indexer');
      }
    };
    const serverPid = child.pid ?? 0;
    const phases = {
      bare: { rounds: [] as AutocannonResult[], cpu: undefined as CpuSplit | undefined },
      withoutDatabase: { rounds: [] as AutocannonResult[], cpu: undefined as CpuSplit | undefined },
      switchboard: { rounds: [] as AutocannonResult[], cpu: undefined as CpuSplit | undefined },
    };
    const measure = async (phase: keyof typeof phases, load: () => Promise<AutocannonResult>): Promise<void> => {
      const before = cpuSplit(serverPid);
      const result = await load();
      phases[phase].cpu = addSplit(phases[phase].cpu, before, cpuSplit(serverPid));
      phases[phase].rounds.push(result);
    };
    // Warm-up: JIT, connection pools, the first database pages.
    await withoutIndexer(ready.barePort, '/', 2);
    await withoutIndexer(ready.withoutDatabasePort, '/hooks/github', 2);
    await run(ready.switchboardPort, '/hooks/github', 3);

    // The throughput phases alternate in short rounds, so a change in background load on a shared
    // machine hits all of them alike instead of skewing the ratio.
    const roundSeconds = Math.max(1, Math.round(seconds / rounds));
    for (let round = 0; round < rounds; round += 1) {
      await measure('bare', () => withoutIndexer(ready.barePort, '/', roundSeconds));
      await measure('withoutDatabase', () => withoutIndexer(ready.withoutDatabasePort, '/hooks/github', roundSeconds));
      await measure('switchboard', () => run(ready.switchboardPort, '/hooks/github', roundSeconds));
    }
    const bare = combine(phases.bare.rounds);
    const withoutDatabase = combine(phases.withoutDatabase.rounds);
    const switchboard = combine(phases.switchboard.rounds);
    // autocannon's --overallRate is not a steady rate: each connection sends its share of the
    // second back to back, then waits for the next second, so the server sees one burst of `rate`
    // requests a second. Kept for comparison; the target is judged on evenly paced load (one
    // delivery every 1/rate s, open loop, latency from the moment each was sent).
    const bursts = await run(ready.switchboardPort, '/hooks/github', seconds, rate);
    const paced = await runGithubLoad({
      baseUrl: `http://127.0.0.1:${ready.switchboardPort}`,
      secret: SECRET,
      concurrency: connections,
      ratePerSecond: rate,
      durationMs: seconds * 1000,
      payload: () => payload,
    });

    const ticksAfter = cpuTicks();
    child.send('count');
    const { rows } = await waitFor<CountReply>(child, 'count');

    const ratio = switchboard.requests.average / bare.requests.average;
    const line = (name: string, r: AutocannonResult): string =>
      `${name.padEnd(34)} ${fmt(r.requests.average).padStart(9)} req/s   p50 ${fmt(r.latency.p50, 1).padStart(6)} ms   p99 ${fmt(r.latency.p99, 1).padStart(6)} ms   non-2xx ${r.non2xx}   errors ${r.errors}\n`;
    process.stdout.write(line('bare Koa (200)', bare));
    process.stdout.write(line('switchboard, no database (ceiling)', withoutDatabase));
    process.stdout.write(line('switchboard ingest', switchboard));
    process.stdout.write(line(`switchboard, ${rate} req/s in bursts`, bursts));
    process.stdout.write(
      `${`switchboard at ${rate} req/s, paced`.padEnd(34)} ${fmt(paced.throughput).padStart(9)} req/s   p50 ${fmt(paced.latencyMs.p50, 1).padStart(6)} ms   ` +
        `p99 ${fmt(paced.latencyMs.p99, 1).padStart(6)} ms   non-2xx ${paced.non2xx}   errors ${paced.failed}   not sent (${connections} in flight) ${paced.skipped}\n`,
    );
    const cpuRows: Array<[string, AutocannonResult, CpuSplit | undefined]> = [
      ['bare Koa (200)', bare, phases.bare.cpu],
      ['switchboard, no database (ceiling)', withoutDatabase, phases.withoutDatabase.cpu],
      ['switchboard ingest', switchboard, phases.switchboard.cpu],
    ];
    if (cpuRows.every(([, , cpu]) => cpu !== undefined)) {
      process.stdout.write(
        `\nCPU per request (µs)               ${'load generator'.padStart(14)} ${'server'.padStart(8)} ${'PostgreSQL'.padStart(10)} ${'whole machine'.padStart(13)}\n`,
      );
      for (const [name, result, cpu] of cpuRows) {
        if (!cpu) continue;
        const perRequest = (seconds: number): string =>
          fmt((seconds * 1e6) / Math.max(1, result.requests.total)).padStart(8);
        process.stdout.write(
          `${name.padEnd(34)} ${perRequest(cpu.loadGenerator).padStart(14)} ${perRequest(cpu.server)} ${perRequest(cpu.postgres).padStart(10)} ${perRequest(cpu.machine).padStart(13)}\n`,
        );
      }
    }
    process.stdout.write(`\nratio switchboard / bare: ${fmt(ratio, 2)}   (target >= 0.5)\n`);
    process.stdout.write(
      `ratio with no database behind the same ingest path: ${fmt(withoutDatabase.requests.average / bare.requests.average, 2)}\n`,
    );
    process.stdout.write(`p99 at a paced ${rate} req/s: ${fmt(paced.latencyMs.p99, 1)} ms   (target <= 25 ms)\n`);
    const steal = stealShare(ticksBefore, ticksAfter);
    if (steal !== undefined) {
      process.stdout.write(`CPU time stolen by the hypervisor during the run: ${fmt(steal * 100)} %\n`);
    }
    const acknowledged = switchboard['2xx'] + bursts['2xx'] + paced.ok;
    process.stdout.write(
      `rows stored: ${fmt(rows)} (includes warm-up); 2xx in measured phases: ${fmt(acknowledged)}\n`,
    );
    const ok =
      ratio >= 0.5 &&
      paced.latencyMs.p99 <= 25 &&
      paced.skipped === 0 &&
      paced.failed === 0 &&
      switchboard.non2xx === 0 &&
      bursts.non2xx === 0 &&
      paced.non2xx === 0;
    process.stdout.write(ok ? 'targets met\n' : 'targets NOT met\n');
    process.exitCode = ok ? 0 : 1;
  } finally {
    child.send('stop');
    await once(child, 'exit');
  }
}

await main();
