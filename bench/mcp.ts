/**
 * MCP benchmark over real HTTP, official SDK client against switchboard's /mcp with 1,000,000
 * stored events, next to a baseline measured in the same run: the same SDK (low-level Server +
 * StreamableHTTPServerTransport, stateful sessions) serving a trivial echo tool with no Koa, no
 * auth and no database. Each server runs in its own child process so its RSS is its own.
 *
 *   npx tsx bench/mcp.ts                                   # embedded PostgreSQL in a temp dir
 *   DATABASE_URL=postgres://… npx tsx bench/mcp.ts         # a scratch database on that server
 *   npx tsx bench/mcp.ts --events 20000 --calls 5000 --samples 300   # a quick check
 *
 * Reports list_webhook_events and get_webhook_event p50/p99 (sequential, interleaved with echo),
 * tool calls/s at concurrency 32, and switchboard's RSS across --calls calls (start, end, growth).
 * Targets: list p50 within 2 ms of echo's; RSS growth at most 10 %. --strict exits 1 on a miss.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once, setMaxListeners } from 'node:events';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, isInitializeRequest, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createPool, sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { createHostCheck } from '../src/auth/host-check.ts';
import { createRateLimiter } from '../src/auth/rate-limiter.ts';
import { requireBearer } from '../src/auth/require-bearer.ts';
import { TokenService } from '../src/auth/token-service.ts';
import { PostgresEventBus } from '../src/bus/postgres-event-bus.ts';
import { resolveConfig } from '../src/config/resolve-config.ts';
import { createApp } from '../src/http/create-app.ts';
import { createLogger } from '../src/log/logger.ts';
import { createMcpSurface } from '../src/mcp/create-mcp-surface.ts';
import { createOutbound } from '../src/outbound/deliver-event.ts';
import { createProviderDirectory } from '../src/provider-directory/provider-directory.ts';
import { createReplayService } from '../src/replay/replay-service.ts';
import { createDatabasePool } from '../src/store/database/database.ts';
import { redactUrl } from '../src/log/redact-url.ts';
import { startEmbeddedPostgres } from '../src/postgres/embedded-postgres.ts';
import { createEventStore } from '../src/store/events/pg-event-store.ts';
import { createReplayAttemptRepository } from '../src/store/records/replay-attempt-repository.ts';
import { createTokenRepository } from '../src/store/records/token-repository.ts';
import { isDatabaseUp } from '../src/store/database/database.ts';
import { migrate } from '../src/store/database/migrate.ts';
import { seedEvents } from '../test/support/seed.ts';

const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
const out = (line = ''): void => {
  process.stdout.write(`${line}\n`);
};
const seconds = (since: number): string => `${((performance.now() - since) / 1000).toFixed(1)} s`;
const ms = (value: number): string => `${value.toFixed(2)} ms`;
const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

// ---------------------------------------------------------------------------------------------
// Child processes: the servers under test.
// ---------------------------------------------------------------------------------------------

type ParentMessage = { type: 'memory' };
type ChildMessage =
  { type: 'ready'; port: number } | { type: 'memory'; rss: number; heapUsed: number; cpuMicros: number };

function serveChildMessages(): void {
  process.on('message', (message: ParentMessage) => {
    if (message.type !== 'memory') return;
    // Garbage that is merely not collected yet is not growth; collect before measuring.
    globalThis.gc?.();
    const usage = process.memoryUsage();
    const cpu = process.cpuUsage();
    const reply: ChildMessage = {
      type: 'memory',
      rss: usage.rss,
      heapUsed: usage.heapUsed,
      cpuMicros: cpu.user + cpu.system,
    };
    process.send?.(reply);
  });
}

/** switchboard as the composition root will wire it, rate limits included but set out of reach. */
async function runSwitchboardChild(databaseUrl: string): Promise<void> {
  const config = resolveConfig({
    rate_limits: { read: { capacity: 1e9, refill_per_second: 1e9 }, replay: { capacity: 1e9, refill_per_second: 1e9 } },
    mcp: { max_sessions: 200 },
  });
  const pool = await createDatabasePool(databaseUrl, { maximumPoolSize: 10 });
  const store = createEventStore(pool);
  const tokens = createTokenRepository(pool);
  const bus = new PostgresEventBus({ databaseUrl, logger });
  await bus.ready();
  const limiter = createRateLimiter({ limits: config.rateLimits });
  let port = 0;
  const surface = createMcpSurface({
    store,
    providers: createProviderDirectory(config.providers, () => undefined),
    replay: createReplayService({
      store,
      attempts: createReplayAttemptRepository(pool),
      providers: config.providers,
      replay: config.replay,
      checkRateLimit: limiter.checkReplay,
      logger,
      outbound: createOutbound({
        providers: config.providers,
        allow: config.outbound.allow,
        selfAddresses: () => [{ host: '127.0.0.1', port }],
        logger,
      }),
    }),
    bus,
    checkReadLimit: limiter.checkRead,
    checkHost: createHostCheck({ bindHost: '127.0.0.1', allowedHosts: [] }),
    authenticate: requireBearer(new TokenService({ tokens })),
    logger,
    sessions: config.mcp,
    replayDefaultTarget: config.replay.defaultTarget,
    replayRate: config.rateLimits.replay,
  });
  const app = createApp({
    logger,
    isDatabaseUp: () => isDatabaseUp(pool),
    trustProxy: false,
    surfaces: [surface.middleware],
  });
  const handle = app.callback();
  const server = createServer((req, res) => void handle(req, res));
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
  serveChildMessages();
  process.send?.({ type: 'ready', port } satisfies ChildMessage);
}

/** The baseline: the same SDK and transport, one echo tool, nothing else. */
async function runEchoChild(): Promise<void> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const newServer = (): Server => {
    const server = new Server({ name: 'echo', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [{ name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }],
    }));
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      const text = request.params.arguments?.text;
      return { content: [{ type: 'text', text: typeof text === 'string' ? text : '' }] };
    });
    return server;
  };
  const readBody = async (req: IncomingMessage): Promise<unknown> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
  };
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const body = req.method === 'POST' ? await readBody(req) : undefined;
      const sessionId = req.headers['mcp-session-id'];
      let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
      if (transport === undefined && isInitializeRequest(body)) {
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void transports.set(id, created),
        });
        created.onclose = () => {
          if (created.sessionId !== undefined) transports.delete(created.sessionId);
        };
        await newServer().connect(created);
        transport = created;
      }
      if (transport === undefined) {
        res.writeHead(404).end();
        return;
      }
      await transport.handleRequest(req, res, body);
    })();
  });
  http.keepAliveTimeout = 60_000;
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  serveChildMessages();
  process.send?.({ type: 'ready', port: (http.address() as AddressInfo).port } satisfies ChildMessage);
}

// ---------------------------------------------------------------------------------------------
// The parent: database, seed, clients, measurements.
// ---------------------------------------------------------------------------------------------

interface Database {
  url: string;
  cleanup(): Promise<void>;
}

async function database(): Promise<Database> {
  const external = process.env.DATABASE_URL?.trim();
  if (external) {
    const name = `switchboard_bench_mcp_${process.pid}`;
    const admin = await createPool(external, { maximumPoolSize: 1 });
    await admin.query(sql.unsafe`CREATE DATABASE ${sql.identifier([name])} TEMPLATE template0 ENCODING 'UTF8'`);
    await admin.end();
    const url = new URL(external);
    url.pathname = `/${name}`;
    out(`database: ${redactUrl(url.toString())} (scratch database on DATABASE_URL's server)`);
    return {
      url: url.toString(),
      cleanup: async () => {
        const again = await createPool(external, { maximumPoolSize: 1 });
        await again.query(sql.unsafe`DROP DATABASE IF EXISTS ${sql.identifier([name])} WITH (FORCE)`);
        await again.end();
      },
    };
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), 'switchboard-bench-mcp-'));
  // As root the server runs as an unprivileged user, which must be able to enter the directory.
  await chmod(dataDir, 0o755);
  const embedded = await startEmbeddedPostgres({ dataDir, logger });
  out(`database: embedded PostgreSQL on 127.0.0.1:${embedded.port}`);
  return {
    url: embedded.url,
    cleanup: async () => {
      await embedded.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

const indexRow = z.object({ name: z.string(), definition: z.string() });

function rawTemplate(text: string): TemplateStringsArray {
  return Object.freeze(Object.assign([text], { raw: Object.freeze([text]) }));
}

/** Loads into an index-less table, then rebuilds the migrations' own indexes once (far faster than row by row). */
async function seed(pool: DatabasePool, count: number): Promise<void> {
  await pool.connect(async (connection) => {
    await connection.query(sql.unsafe`SET maintenance_work_mem = '512MB'`);
    const indexes = await connection.any(sql.type(indexRow)`
      SELECT indexname AS name, indexdef AS definition FROM pg_indexes WHERE tablename = 'events' AND indexname <> 'events_pkey'
    `);
    for (const index of indexes) await connection.query(sql.unsafe`DROP INDEX ${sql.identifier([index.name])}`);
    let started = performance.now();
    const chunk = 100_000;
    for (let start = 1; start <= count; start += chunk) {
      await seedEvents(connection, { count: Math.min(chunk, count - start + 1), providers: 10, start, stepMs: 10 });
    }
    out(`seeded ${count.toLocaleString('en')} events in ${seconds(started)}`);
    started = performance.now();
    for (const index of indexes) await connection.query(sql.unsafe(rawTemplate(index.definition)));
    await connection.query(sql.unsafe`VACUUM ANALYZE events`);
    out(`rebuilt ${indexes.length} indexes and analyzed in ${seconds(started)}`);
  });
}

interface Child {
  process: ChildProcess;
  port: number;
  /** RSS and heap after a GC, and the CPU time the process has used so far. */
  memory(): Promise<{ rss: number; heapUsed: number; cpuMicros: number }>;
}

async function startChild(role: 'switchboard' | 'echo', databaseUrl: string): Promise<Child> {
  const child = fork(fileURLToPath(import.meta.url), ['--role', role], {
    execArgv: ['--import', 'tsx', '--expose-gc'],
    env: { ...process.env, BENCH_DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [ready] = (await once(child, 'message')) as [ChildMessage];
  if (ready.type !== 'ready') throw new Error(`${role} did not start`);
  return {
    process: child,
    port: ready.port,
    async memory() {
      child.send({ type: 'memory' } satisfies ParentMessage);
      const [reply] = (await once(child, 'message')) as [ChildMessage];
      if (reply.type !== 'memory') throw new Error('unexpected reply');
      return { rss: reply.rss, heapUsed: reply.heapUsed, cpuMicros: reply.cpuMicros };
    },
  };
}

async function connect(port: number, token: string | undefined): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  const headers: Record<string, string> = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers } }),
  );
  // With the tools listed the client validates structured output, as an agent's would.
  await client.listTools();
  return client;
}

interface Timing {
  p50: number;
  p99: number;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

function summarize(samples: number[]): Timing {
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<void> {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError === true) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
}

/** Round-robin over the cases, so machine noise lands on all of them alike. */
async function latencies(cases: ReadonlyArray<() => Promise<void>>, samples: number): Promise<Timing[]> {
  for (let i = 0; i < Math.min(200, samples); i += 1) for (const run of cases) await run();
  const collected = cases.map((): number[] => []);
  for (let i = 0; i < samples; i += 1) {
    for (const [index, run] of cases.entries()) {
      const started = performance.now();
      await run();
      collected[index]?.push(performance.now() - started);
    }
  }
  return collected.map(summarize);
}

/** total calls spread over the clients, each client one call at a time: calls per second. */
async function throughput(
  clients: readonly Client[],
  total: number,
  next: (i: number) => [string, Record<string, unknown>],
): Promise<number> {
  let issued = 0;
  const started = performance.now();
  await Promise.all(
    clients.map(async (client) => {
      while (issued < total) {
        const i = issued;
        issued += 1;
        const [name, args] = next(i);
        await call(client, name, args);
      }
    }),
  );
  return total / ((performance.now() - started) / 1000);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      role: { type: 'string' },
      events: { type: 'string', default: '1000000' },
      calls: { type: 'string', default: '100000' },
      samples: { type: 'string', default: '2000' },
      concurrency: { type: 'string', default: '32' },
      'throughput-calls': { type: 'string', default: '10000' },
      strict: { type: 'boolean', default: false },
    },
  });
  if (values.role === 'switchboard') {
    await runSwitchboardChild(process.env.BENCH_DATABASE_URL ?? '');
    return -1;
  }
  if (values.role === 'echo') {
    await runEchoChild();
    return -1;
  }
  // The SDK client adds an abort listener per request to its transport's one AbortSignal and some
  // outlive their request, which floods stderr with MaxListenersExceeded warnings over thousands
  // of calls. Client-side only (this process), not the server under test.
  setMaxListeners(0);
  const events = Number(values.events);
  const calls = Number(values.calls);
  const samples = Number(values.samples);
  const concurrency = Number(values.concurrency);
  const throughputCalls = Number(values['throughput-calls']);

  const db = await database();
  const children: Child[] = [];
  try {
    const pool = await createDatabasePool(db.url, { statementTimeoutMs: 600_000, maximumPoolSize: 2 });
    await migrate(pool, logger);
    await seed(pool, events);
    const { token } = await createTokenRepository(pool).create('bench');
    const ids = (
      await pool.anyFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id::text FROM events TABLESAMPLE SYSTEM (1) LIMIT 2000
    `)
    ).slice();
    if (ids.length === 0)
      ids.push(
        ...(await pool.anyFirst(sql.type(z.object({ id: z.string() }))`SELECT id::text FROM events LIMIT 2000`)),
      );
    await pool.end();

    const switchboard = await startChild('switchboard', db.url);
    const echo = await startChild('echo', db.url);
    children.push(switchboard, echo);
    out(
      `switchboard pid ${switchboard.process.pid ?? '?'} on :${switchboard.port}, echo baseline pid ${echo.process.pid ?? '?'} on :${echo.port}`,
    );

    const sb = await connect(switchboard.port, token);
    const baseline = await connect(echo.port, undefined);
    let g = 0;
    const randomId = (): string => ids[(g += 7919) % ids.length] ?? '';
    const [echoT, listT, getT] = await latencies(
      [
        () => call(baseline, 'echo', { text: 'hello' }),
        () => call(sb, 'list_webhook_events', {}),
        () => call(sb, 'get_webhook_event', { id: randomId() }),
      ],
      samples,
    );
    if (!echoT || !listT || !getT) throw new Error('no timings');

    const sbClients = await Promise.all(Array.from({ length: concurrency }, () => connect(switchboard.port, token)));
    const echoClients = await Promise.all(Array.from({ length: concurrency }, () => connect(echo.port, undefined)));
    /**
     * Calls per second, and the server process's CPU time per call: on a shared machine wall-clock
     * latency mostly measures the neighbours, CPU time per call much less so.
     */
    const measured = async (
      child: Child,
      clients: readonly Client[],
      next: (i: number) => [string, Record<string, unknown>],
    ) => {
      const before = await child.memory();
      const rate = await throughput(clients, throughputCalls, next);
      const after = await child.memory();
      return { rate, cpuMs: (after.cpuMicros - before.cpuMicros) / 1000 / throughputCalls };
    };
    const echoRun = await measured(echo, echoClients, () => ['echo', { text: 'hello' }]);
    const listRun = await measured(switchboard, sbClients, () => ['list_webhook_events', {}]);
    const getRun = await measured(switchboard, sbClients, () => ['get_webhook_event', { id: randomId() }]);

    // Memory: warm up, then RSS before and after `calls` mixed calls at the same concurrency.
    const mix = (i: number): [string, Record<string, unknown>] =>
      i % 4 === 0
        ? ['get_webhook_event', { id: randomId() }]
        : i % 4 === 1
          ? ['list_providers', {}]
          : ['list_webhook_events', { limit: 20, provider: `provider-${i % 10}` }];
    await throughput(sbClients, Math.min(5_000, Math.max(500, Math.floor(calls / 10))), mix);
    const before = await switchboard.memory();
    const memoryStarted = performance.now();
    const mixRate = await throughput(sbClients, calls, mix);
    const after = await switchboard.memory();
    const growth = ((after.rss - before.rss) / before.rss) * 100;

    const listGap = listT.p50 - echoT.p50;
    const listOk = listGap <= 2;
    const rssOk = growth <= 10;
    out();
    out(`events stored: ${events.toLocaleString('en')}`);
    out(`latency, one client, ${samples} interleaved samples per tool:`);
    out(`  echo (baseline)       p50 ${ms(echoT.p50)}   p99 ${ms(echoT.p99)}`);
    out(
      `  list_webhook_events   p50 ${ms(listT.p50)}   p99 ${ms(listT.p99)}   p50 − echo p50 = ${ms(listGap)}  (target ≤ 2 ms: ${listOk ? 'met' : 'MISSED'})`,
    );
    out(`  get_webhook_event     p50 ${ms(getT.p50)}   p99 ${ms(getT.p99)}`);
    out(
      `throughput at concurrency ${concurrency}, ${throughputCalls.toLocaleString('en')} calls each (server CPU per call in brackets):`,
    );
    out(`  echo (baseline)       ${echoRun.rate.toFixed(0)} calls/s   (${ms(echoRun.cpuMs)})`);
    out(`  list_webhook_events   ${listRun.rate.toFixed(0)} calls/s   (${ms(listRun.cpuMs)})`);
    out(`  get_webhook_event     ${getRun.rate.toFixed(0)} calls/s   (${ms(getRun.cpuMs)})`);
    out(
      `switchboard server RSS across ${calls.toLocaleString('en')} mixed calls (${mixRate.toFixed(0)} calls/s, ${seconds(memoryStarted)}), after GC:`,
    );
    out(
      `  start ${mib(before.rss)} (heap ${mib(before.heapUsed)})   end ${mib(after.rss)} (heap ${mib(after.heapUsed)})   growth ${growth.toFixed(1)} %  (target ≤ 10 %: ${rssOk ? 'met' : 'MISSED'})`,
    );

    await Promise.all([sb, baseline, ...sbClients, ...echoClients].map((c) => c.close().catch(() => undefined)));
    return values.strict && !(listOk && rssOk) ? 1 : 0;
  } finally {
    // Children first, and waited for: stopping PostgreSQL under their open connections makes it
    // log a FATAL line per connection.
    await Promise.all(
      children.map(async (child) => {
        if (child.process.exitCode !== null || child.process.signalCode !== null) return;
        const exited = once(child.process, 'exit');
        child.process.kill();
        await exited;
      }),
    );
    await db.cleanup();
  }
}

const code = await main();
if (code >= 0) process.exit(code);
