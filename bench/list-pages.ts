/**
 * List pages over 1,000,000 events on the partitioned table (issue 40, part 1), as a new user has
 * them: every event received in the last minutes (so one day partition holds them all, beside the
 * week of partitions made ahead and the DEFAULT partition), ten providers, a forward rule
 * configured and no delivery yet. The real server (startSwitchboard) runs in a child process; each
 * request's server-side time is taken there from Node's HTTP diagnostics channels (request start
 * to response finish), the round trip here.
 *
 * On both surfaces, list_webhook_events over the official MCP SDK client and GET /api/events (the
 * UI's list, with its forward-state marks): the first page, the first page of provider-3, and page
 * 1,001 of provider-3 by cursor; then deep ÷ first. Targets: a first page within 5 ms server-side,
 * deep ÷ first at most 1.5.
 *
 * Two phases: right after the load, with no statistics (a server with autovacuum off, or before
 * it got there), then after ANALYZE. Each phase runs --rounds rounds over the cases in a rotated
 * order, one call at a time, and reports the hypervisor's steal from /proc/stat per round.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/list-pages.ts
 *   DATABASE_URL=… npx tsx bench/list-pages.ts --events 100000 --samples 30   # a quick run
 *
 * Without DATABASE_URL an embedded PostgreSQL runs in a temporary directory. --keep leaves the
 * database (with DATABASE_URL; its name is printed) and --reuse <name> measures it again without
 * loading. The load is seedEvents' bulk SQL; the search queue the insert trigger fills is emptied
 * afterwards, so the server's indexer is idle, unless --indexing leaves it to work through the
 * backlog during the measurement (as it would after a real burst). --cpu-prof <dir> has the server
 * write a V8 CPU profile there (summarise it with bench/cpu-profile-summary.ts).
 */
import { fork } from 'node:child_process';
import { subscribe } from 'node:diagnostics_channel';
import { once, setMaxListeners } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { sql } from 'slonik';
import { z } from 'zod';
import { resolveConfig } from '../src/config/resolve-config.ts';
import { createLogger } from '../src/log/logger.ts';
import { startSwitchboard } from '../src/server/start-switchboard.ts';
import { encodeCursor } from '../src/store/events/cursor.ts';
import { createDatabasePool } from '../src/store/database/database.ts';
import { resolveListQuery } from '../src/store/events/list-statement.ts';
import { migrate } from '../src/store/database/migrate.ts';
import { ensurePartitions } from '../src/store/partitions/partitions.ts';
import { microsFromRfc3339 } from '../src/store/sql/timestamps.ts';
import { seedEvents } from '../test/support/seed.ts';
import { openKeptBenchDatabase } from './bench-database.ts';
import { cpuTicks, stealShare } from './cpu-ticks.ts';

const { values: args } = parseArgs({
  options: {
    role: { type: 'string' },
    events: { type: 'string', default: '1000000' },
    samples: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '3' },
    keep: { type: 'boolean', default: false },
    reuse: { type: 'string' },
    indexing: { type: 'boolean', default: false },
    // A directory: the server writes a V8 CPU profile there (bench/cpu-profile-summary.ts reads it).
    'cpu-prof': { type: 'string' },
  },
});
const EVENTS = Number(args.events);
const SAMPLES = Number(args.samples);
const ROUNDS = Number(args.rounds);
const PAGE = 50;
const PROVIDERS = 10;
/** Page 1,001, or half-way down a smaller run's provider-3 pages. */
const DEEP_PAGE = Math.max(2, Math.min(1_001, Math.floor(EVENTS / PROVIDERS / PAGE / 2) + 1));
const PROVIDER = 'provider-3';
const TOKEN = 'bench-list-pages-token-0123456789';
const TARGET_FIRST_MS = 5;
const TARGET_RATIO = 1.5;

const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
const out = (line = ''): void => void process.stdout.write(`${line}\n`);

// ---------------------------------------------------------------------------------------------
// The child: switchboard as a user runs it, timing each request it serves.

type ToChild = { type: 'take' } | { type: 'stop' };
type FromChild =
  { type: 'ready'; port: number } | { type: 'taken'; requests: Array<{ path: string; ms: number }>; cpuMs: number };

async function runServerChild(databaseUrl: string): Promise<void> {
  const consumer = createServer((_req: IncomingMessage, res: ServerResponse) => res.writeHead(200).end());
  consumer.listen(0, '127.0.0.1');
  await once(consumer, 'listening');
  const providers = Object.fromEntries(
    Array.from({ length: PROVIDERS }, (_, n) => [`provider-${n}`, { trust_mode: 'open' }]),
  );
  const dataDir = await mkdtemp(path.join(tmpdir(), 'switchboard-bench-list-'));
  const running = await startSwitchboard({
    config: resolveConfig({
      providers,
      forward: { app: { to: `http://127.0.0.1:${(consumer.address() as AddressInfo).port}/hooks` } },
      rate_limits: {
        read: { capacity: 1e9, refill_per_second: 1e9 },
        replay: { capacity: 1e9, refill_per_second: 1e9 },
      },
    }),
    logger,
    host: '127.0.0.1',
    port: 0,
    databaseUrl,
    dataDir,
    envToken: TOKEN,
    redisUrl: undefined,
  });
  // Request start to response finish, as Node's HTTP server sees them: the server-side time.
  const started = new WeakMap<object, bigint>();
  let served: Array<{ path: string; ms: number }> = [];
  subscribe('http.server.request.start', (message) => {
    started.set((message as { response: object }).response, process.hrtime.bigint());
  });
  subscribe('http.server.response.finish', (message) => {
    const { request, response } = message as { request: IncomingMessage; response: object };
    const at = started.get(response);
    if (at === undefined) return;
    served.push({ path: `${request.method} ${request.url ?? ''}`, ms: Number(process.hrtime.bigint() - at) / 1e6 });
  });
  let cpu = process.cpuUsage();
  process.on('message', (message: ToChild) => {
    if (message.type === 'take') {
      const used = process.cpuUsage(cpu);
      cpu = process.cpuUsage();
      process.send?.({ type: 'taken', requests: served, cpuMs: (used.user + used.system) / 1000 } satisfies FromChild);
      served = [];
      return;
    }
    void running
      .close()
      .then(() => rm(dataDir, { recursive: true, force: true }))
      .finally(() => process.exit(0));
  });
  process.send?.({ type: 'ready', port: Number(new URL(running.url).port) } satisfies FromChild);
}

// ---------------------------------------------------------------------------------------------
// The parent: the database, the load, the clients and the measurements.

/** EVENTS events, one a millisecond, the last a minute ago: what a burst of a new user's leaves. */
async function load(url: string): Promise<void> {
  const pool = await createDatabasePool(url, { maximumPoolSize: 1, statementTimeoutMs: 3_600_000 });
  try {
    await migrate(pool, logger);
    const from = new Date(Date.now() - EVENTS - 60_000).toISOString();
    // Just after midnight UTC the first events fall on the day before, which has no partition yet.
    await ensurePartitions(pool, 'day', from);
    const started = performance.now();
    await seedEvents(pool, { count: EVENTS, providers: PROVIDERS, stepMs: 1, from });
    if (!args.indexing) await pool.query(sql.unsafe`DELETE FROM event_search_queue`);
    out(`loaded ${EVENTS.toLocaleString('en')} events in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await pool.end();
  }
}

/** The cursor that ends page DEEP_PAGE - 1 of provider-3, newest first, as the server hands it out. */
async function deepCursor(url: string): Promise<{ cursor: string; firstId: string; stored: number }> {
  const pool = await createDatabasePool(url, { maximumPoolSize: 1, statementTimeoutMs: 600_000 });
  try {
    const rows = await pool.any(sql.type(z.object({ id: z.string(), at: z.string() }))`
      SELECT id::text, to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at
      FROM events WHERE provider = ${PROVIDER} ORDER BY received_at DESC, id DESC
      OFFSET ${(DEEP_PAGE - 1) * PAGE - 1} LIMIT 2
    `);
    const [last, next] = rows;
    if (!last || !next) throw new Error(`fewer than ${(DEEP_PAGE - 1) * PAGE + 1} events of ${PROVIDER}`);
    const fingerprint = resolveListQuery({ provider: PROVIDER, limit: PAGE }).fingerprint;
    const cursor = encodeCursor({ receivedAtMicros: microsFromRfc3339(last.at) ?? 0n, id: last.id, fingerprint });
    const stored = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::float8 AS n FROM events`);
    return { cursor, firstId: next.id, stored };
  } finally {
    await pool.end();
  }
}

interface Server {
  port: number;
  /** The requests served since the last take, each with its server-side time, and the process's CPU time since. */
  take(): Promise<{ requests: Array<{ path: string; ms: number }>; cpuMs: number }>;
  stop(): Promise<void>;
}

async function startServer(url: string): Promise<Server> {
  const child = fork(fileURLToPath(import.meta.url), ['--role', 'server'], {
    execArgv: ['--import', 'tsx', ...(args['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${args['cpu-prof']}`] : [])],
    env: { ...process.env, BENCH_DATABASE_URL: url },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [ready] = (await once(child, 'message')) as [FromChild];
  if (ready.type !== 'ready') throw new Error('the server did not start');
  return {
    port: ready.port,
    async take() {
      child.send({ type: 'take' } satisfies ToChild);
      const [reply] = (await once(child, 'message')) as [FromChild];
      if (reply.type !== 'taken') throw new Error('unexpected reply');
      return { requests: reply.requests, cpuMs: reply.cpuMs };
    },
    async stop() {
      const exited = once(child, 'exit');
      child.send({ type: 'stop' } satisfies ToChild);
      await exited;
    },
  };
}

type ListArgs = { provider?: string; cursor?: string };
interface Case {
  label: string;
  surface: 'MCP' | 'API';
  call: () => Promise<string | undefined>;
  /** The request path the server-side time is read from. */
  path: string;
}

function cases(port: number, mcp: Client, deep: string): Case[] {
  const api = async (list: ListArgs): Promise<string | undefined> => {
    const query = new URLSearchParams({ limit: String(PAGE), ...list });
    const response = await fetch(`http://127.0.0.1:${port}/api/events?${query.toString()}`, {
      headers: { Authorization: `Bearer ${TOKEN}` },
    });
    if (!response.ok) throw new Error(`GET /api/events answered ${response.status}`);
    const body = (await response.json()) as { events: Array<{ id: string }> };
    return body.events[0]?.id;
  };
  const tool = async (list: ListArgs): Promise<string | undefined> => {
    const result = await mcp.callTool({ name: 'list_webhook_events', arguments: { limit: PAGE, ...list } });
    if (result.isError === true) throw new Error(`list_webhook_events failed: ${JSON.stringify(result.content)}`);
    const page = result.structuredContent as { events: Array<{ id: string }> } | undefined;
    return page?.events[0]?.id;
  };
  const shapes: Array<[string, ListArgs]> = [
    ['first page', {}],
    [`${PROVIDER} first page`, { provider: PROVIDER }],
    [`${PROVIDER} page ${DEEP_PAGE.toLocaleString('en')}`, { provider: PROVIDER, cursor: deep }],
  ];
  return shapes.flatMap(([label, list]) => [
    { label, surface: 'MCP' as const, call: () => tool(list), path: 'POST /mcp' },
    { label, surface: 'API' as const, call: () => api(list), path: 'GET /api/events' },
  ]);
}

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;

interface Samples {
  server: number[];
  client: number[];
  /** The server process's CPU time over the call (and whatever it did in the background meanwhile). */
  cpu: number[];
}

/** One call, its round trip here and its server-side time there. */
async function sample(server: Server, entry: Case, into: Samples): Promise<void> {
  const started = performance.now();
  await entry.call();
  into.client.push(performance.now() - started);
  const { requests, cpuMs } = await server.take();
  const served = requests.filter((request) => request.path.startsWith(entry.path));
  if (served.length !== 1) throw new Error(`${entry.surface} ${entry.label}: ${served.length} requests served`);
  into.server.push(served[0]?.ms ?? Number.NaN);
  into.cpu.push(cpuMs);
}

async function phase(label: string, server: Server, all: readonly Case[]): Promise<void> {
  out(`\n${label}`);
  const measured = all.map((): Samples => ({ server: [], client: [], cpu: [] }));
  for (const entry of all)
    for (let i = 0; i < 5; i += 1) await sample(server, entry, { server: [], client: [], cpu: [] });
  for (let round = 0; round < ROUNDS; round += 1) {
    const ticks = cpuTicks();
    const started = performance.now();
    const order = all.map((_, index) => (index + round) % all.length);
    for (let i = 0; i < SAMPLES; i += 1) {
      for (const index of order) {
        const entry = all[index];
        const into = measured[index];
        if (entry && into) await sample(server, entry, into);
      }
    }
    const steal = stealShare(ticks, cpuTicks());
    out(
      `  round ${round + 1}: ${((performance.now() - started) / 1000).toFixed(1)} s, hypervisor steal ` +
        `${steal === undefined ? 'unknown (no /proc/stat)' : `${(steal * 100).toFixed(1)} %`}`,
    );
  }
  report(all, measured);
}

function report(all: readonly Case[], measured: readonly Samples[]): void {
  const p50 = (values: readonly number[]): number =>
    percentile(
      [...values].sort((a, b) => a - b),
      50,
    );
  const p99 = (values: readonly number[]): number =>
    percentile(
      [...values].sort((a, b) => a - b),
      99,
    );
  const ms = (value: number): string => value.toFixed(2).padStart(7);
  out(`  ${'case'.padEnd(32)}  server p50     p99   round trip p50     p99   server CPU p50`);
  for (const [index, entry] of all.entries()) {
    const m = measured[index];
    if (!m) continue;
    out(
      `  ${`${entry.surface} ${entry.label}`.padEnd(32)}  ${ms(p50(m.server))} ${ms(p99(m.server))}          ${ms(p50(m.client))} ${ms(p99(m.client))}          ${ms(p50(m.cpu))}`,
    );
  }
  for (const surface of ['MCP', 'API'] as const) {
    const at = (label: string): Samples | undefined =>
      measured[all.findIndex((entry) => entry.surface === surface && entry.label.startsWith(label))];
    const first = at('first page');
    const providerFirst = at(`${PROVIDER} first`);
    const deep = at(`${PROVIDER} page`);
    if (!first || !providerFirst || !deep) continue;
    const ratio = p50(deep.server) / p50(first.server);
    const ratioProvider = p50(deep.server) / p50(providerFirst.server);
    const worstFirst = Math.max(p50(first.server), p50(providerFirst.server));
    out(
      `  ${surface}: deep ÷ first page ${ratio.toFixed(2)}, deep ÷ ${PROVIDER} first page ${ratioProvider.toFixed(2)} ` +
        `(target ≤ ${TARGET_RATIO}: ${Math.max(ratio, ratioProvider) <= TARGET_RATIO ? 'met' : 'MISSED'}); ` +
        `first pages p50 ≤ ${ms(worstFirst).trim()} ms server-side (target ≤ ${TARGET_FIRST_MS}: ${worstFirst <= TARGET_FIRST_MS ? 'met' : 'MISSED'})`,
    );
  }
}

async function main(): Promise<void> {
  const database = await openKeptBenchDatabase(logger, 'sb_list_pages', { keep: args.keep, reuse: args.reuse });
  let server: Server | undefined;
  let mcp: Client | undefined;
  try {
    if (!args.reuse) await load(database.url);
    const { cursor, firstId, stored } = await deepCursor(database.url);
    out(
      `# bench/list-pages.ts: ${stored.toLocaleString('en')} events on ${database.where}, ${ROUNDS} rounds of ${SAMPLES} calls a case`,
    );
    server = await startServer(database.url);
    // The SDK client adds an abort listener per request that some outlive: client-side noise only.
    setMaxListeners(0);
    mcp = new Client({ name: 'bench-list-pages', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.port}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
      }),
    );
    await mcp.listTools();
    await server.take();
    const all = cases(server.port, mcp, cursor);
    for (const entry of all.filter((c) => c.label.includes(`page ${DEEP_PAGE.toLocaleString('en')}`))) {
      if ((await entry.call()) !== firstId) throw new Error(`${entry.surface}: page ${DEEP_PAGE} starts elsewhere`);
    }
    await server.take();
    await phase('phase 1: right after the load, no statistics', server, all);
    const pool = await createDatabasePool(database.url, { maximumPoolSize: 1, statementTimeoutMs: 600_000 });
    await pool.query(sql.unsafe`ANALYZE`);
    await pool.end();
    await phase('phase 2: after ANALYZE', server, all);
  } finally {
    await mcp?.close().catch(() => undefined);
    await server?.stop();
    await database.close();
  }
}

if (args.role === 'server') await runServerChild(process.env.BENCH_DATABASE_URL ?? '');
else await main();
