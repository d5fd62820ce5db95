/**
 * Soak: a switchboard child process under ingest + MCP reads + replays together, at fixed rates,
 * for 10 minutes by default; loopback only, bounded in time and in requests in flight.
 *
 *   npx tsx bench/soak.ts [--minutes 10] [--ingest-rate 40] [--read-rate 10] [--replay-rate 2] [--warmup-seconds 30]
 *
 * DATABASE_URL is used when set (a fresh database is created on that server and dropped after);
 * otherwise the child runs its embedded PostgreSQL in a temp directory. Redis is not needed.
 *
 * Prints throughput, p50/p99 latency and errors per kind, and the server child's RSS at the start
 * (after the warm-up, when the JIT and pools have settled) and at the end. Exits 1 unless there
 * were 0 errors, every acknowledged delivery is stored, and RSS grew by at most 10 %.
 */
import { once } from 'node:events';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { createPool, sql } from 'slonik';
import { callTool, connectMcp } from '../test/reliability/support/clients.ts';
import { spawnSwitchboard } from '../test/support/spawn-switchboard.ts';
import { percentile, runGithubLoad, type DeliveryOutcome } from './load-driver.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    'ingest-rate': { type: 'string', default: '40' },
    'read-rate': { type: 'string', default: '10' },
    'replay-rate': { type: 'string', default: '2' },
    'warmup-seconds': { type: 'string', default: '30' },
    'max-rss-growth': { type: 'string', default: '0.10' },
  },
});
const durationMs = Number(values.minutes) * 60_000;
const ingestRate = Number(values['ingest-rate']);
const readRate = Number(values['read-rate']);
const replayRate = Number(values['replay-rate']);
const warmupMs = Math.min(Number(values['warmup-seconds']) * 1000, durationMs / 4);
const maxRssGrowth = Number(values['max-rss-growth']);
const SECRET = `soak-${randomBytes(8).toString('hex')}`;

interface KindStats {
  ok: number;
  errors: number;
  latencies: number[];
  /** Latencies of requests started after the warm-up (the steady state). */
  steady: number[];
  firstErrors: string[];
}
const newStats = (): KindStats => ({ ok: 0, errors: 0, latencies: [], steady: [], firstErrors: [] });
const stats: Record<'ingest' | 'read' | 'replay', KindStats> = {
  ingest: newStats(),
  read: newStats(),
  replay: newStats(),
};
let steadyFrom = Number.POSITIVE_INFINITY;
function record(kind: keyof typeof stats, ok: boolean, latencyMs: number, error?: string): void {
  const s = stats[kind];
  s.latencies.push(latencyMs);
  if (performance.now() - latencyMs >= steadyFrom) s.steady.push(latencyMs);
  if (ok) s.ok += 1;
  else {
    s.errors += 1;
    if (s.firstErrors.length < 5) s.firstErrors.push(error ?? 'error');
  }
}

/** Runs `task` `ratePerSecond` times a second until the deadline, at most `maxInFlight` at once. */
async function atFixedRate(
  ratePerSecond: number,
  deadline: number,
  maxInFlight: number,
  task: () => Promise<void>,
  onSkip: () => void,
): Promise<void> {
  if (ratePerSecond <= 0) return;
  const interval = 1000 / ratePerSecond;
  const started = performance.now();
  const inFlight = new Set<Promise<void>>();
  for (let k = 0; ; k += 1) {
    const due = started + k * interval;
    if (due >= deadline) break;
    const wait = due - performance.now();
    if (wait > 0) await delay(wait);
    if (inFlight.size >= maxInFlight) {
      onSkip();
      continue;
    }
    const run = task().catch(() => undefined);
    inFlight.add(run);
    void run.finally(() => inFlight.delete(run));
  }
  await Promise.all(inFlight);
}

async function main(): Promise<number> {
  const external = process.env.DATABASE_URL?.trim();
  let databaseUrl: string | null = null;
  let dropDatabase = async (): Promise<void> => undefined;
  if (external) {
    const name = `sb_soak_${randomBytes(5).toString('hex')}`;
    const admin = await createPool(external, { maximumPoolSize: 1 });
    await admin.query(sql.unsafe`CREATE DATABASE ${sql.identifier([name])} TEMPLATE template0 ENCODING 'UTF8'`);
    await admin.end();
    const url = new URL(external);
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
    dropDatabase = async () => {
      const cleanup = await createPool(external, { maximumPoolSize: 1 });
      await cleanup.query(sql.unsafe`DROP DATABASE IF EXISTS ${sql.identifier([name])} WITH (FORCE)`);
      await cleanup.end();
    };
  }

  const consumer = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  consumer.listen(0, '127.0.0.1');
  await once(consumer, 'listening');
  const consumerPort = (consumer.address() as AddressInfo).port;

  const child = await spawnSwitchboard({
    config: {
      providers: { github: { preset: 'github', secret: SECRET } },
      replay: { default_target: `http://127.0.0.1:${consumerPort}/webhooks` },
      rate_limits: {
        read: { capacity: 100_000, refill_per_second: 100_000 },
        replay: { capacity: 100_000, refill_per_second: 100_000 },
      },
    },
    databaseUrl,
    logLevel: 'warn',
    startTimeoutMs: 120_000,
  });
  process.stdout.write(
    `soak: switchboard pid ${child.pid} at ${child.url} (${databaseUrl ? 'DATABASE_URL' : 'embedded PostgreSQL'}); ` +
      `${values.minutes} min at ${ingestRate} deliveries/s, ${readRate} MCP reads/s, ${replayRate} replays/s\n`,
  );

  const mcp = await connectMcp(child.mcpUrl, child.token ?? '', 'soak');
  const recentIds: string[] = [];
  const acknowledged: string[] = [];
  let skipped = 0;
  const rssSamples: Array<{ atMs: number; rss: number }> = [];
  const started = performance.now();
  const deadline = started + durationMs;
  steadyFrom = started + warmupMs;
  const sampler = setInterval(() => rssSamples.push({ atMs: performance.now() - started, rss: child.rss() }), 5_000);

  const ingest = runGithubLoad({
    baseUrl: child.url,
    secret: SECRET,
    ratePerSecond: ingestRate,
    concurrency: 64,
    durationMs,
    requestTimeoutMs: 15_000,
    onOutcome: (o: DeliveryOutcome) => {
      const ok = o.status === 200 && o.id !== null;
      record('ingest', ok, o.latencyMs, ok ? undefined : `${o.status ?? 'no answer'}: ${o.error ?? ''}`);
      if (ok && o.id !== null) {
        acknowledged.push(o.id);
        recentIds.push(o.id);
        if (recentIds.length > 500) recentIds.shift();
      }
    },
  });

  let readCounter = 0;
  let cursor: string | undefined;
  const reads = atFixedRate(
    readRate,
    deadline,
    32,
    async () => {
      readCounter += 1;
      const t = performance.now();
      const useGet = readCounter % 2 === 0 && recentIds.length > 0;
      try {
        const outcome = useGet
          ? await callTool(mcp, 'get_webhook_event', { id: recentIds[Math.floor(Math.random() * recentIds.length)] })
          : await callTool(mcp, 'list_webhook_events', {
              limit: 20,
              ...(readCounter % 10 === 1 || cursor === undefined ? {} : { cursor }),
            });
        if (outcome.ok && !useGet) cursor = outcome.value.next_cursor as string | undefined;
        record(
          'read',
          outcome.ok,
          performance.now() - t,
          outcome.ok ? undefined : `${outcome.error.code}: ${outcome.error.message}`,
        );
      } catch (err) {
        record('read', false, performance.now() - t, err instanceof Error ? err.message : String(err));
      }
    },
    () => (skipped += 1),
  );

  const replays = atFixedRate(
    replayRate,
    deadline,
    16,
    async () => {
      if (recentIds.length === 0) return;
      const t = performance.now();
      try {
        const outcome = await callTool(mcp, 'replay_webhook_event', {
          id: recentIds[Math.floor(Math.random() * recentIds.length)],
        });
        const delivered = outcome.ok && outcome.value.delivered !== false;
        record(
          'replay',
          delivered,
          performance.now() - t,
          outcome.ok
            ? `not delivered: ${JSON.stringify(outcome.value).slice(0, 200)}`
            : `${outcome.error.code}: ${outcome.error.message}`,
        );
      } catch (err) {
        record('replay', false, performance.now() - t, err instanceof Error ? err.message : String(err));
      }
    },
    () => (skipped += 1),
  );

  const progress = setInterval(() => {
    const elapsed = (performance.now() - started) / 1000;
    process.stdout.write(
      `  ${elapsed.toFixed(0)} s: ingest ${stats.ingest.ok}/${stats.ingest.errors} err, reads ${stats.read.ok}/${stats.read.errors} err, ` +
        `replays ${stats.replay.ok}/${stats.replay.errors} err, rss ${(child.rss() / 1048576).toFixed(1)} MiB\n`,
    );
  }, 60_000);

  const ingestReport = await ingest;
  await Promise.all([reads, replays]);
  clearInterval(progress);
  clearInterval(sampler);
  rssSamples.push({ atMs: performance.now() - started, rss: child.rss() });
  skipped += ingestReport.skipped;

  // Every acknowledged delivery is stored (checked through the server, in pages of ids).
  let missing = 0;
  const verifyPool = databaseUrl === null ? null : await createPool(databaseUrl, { maximumPoolSize: 1 });
  if (verifyPool !== null) {
    for (let i = 0; i < acknowledged.length; i += 5_000) {
      const ids = acknowledged.slice(i, i + 5_000);
      const found = Number(
        await verifyPool.oneFirst(
          sql.unsafe`SELECT count(*)::int FROM events WHERE id = ANY(${sql.array(ids, 'uuid')})`,
        ),
      );
      missing += ids.length - found;
    }
    await verifyPool.end();
  } else {
    // Embedded database: ask the server for a sample (the database is private to the child).
    for (const id of acknowledged.filter((_, i) => i % 97 === 0)) {
      const response = await fetch(`${child.url}/api/events/${id}`, {
        headers: { authorization: `Bearer ${child.token}` },
      });
      if (response.status !== 200) missing += 1;
      await response.arrayBuffer();
    }
  }

  await mcp.close().catch(() => undefined);
  const exit = await child.stop();
  child.cleanup();
  consumer.close();
  await dropDatabase();

  const median = (xs: number[]): number => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.floor(s.length / 2)] ?? 0;
  };
  const afterWarmup = rssSamples.filter((s) => s.atMs >= warmupMs);
  const startRss = median(afterWarmup.slice(0, 3).map((s) => s.rss));
  const endRss = median(afterWarmup.slice(-3).map((s) => s.rss));
  const maxRss = Math.max(...rssSamples.map((s) => s.rss));
  const growth = startRss > 0 ? (endRss - startRss) / startRss : 0;
  const seconds = (performance.now() - started) / 1000;
  const mib = (b: number): string => `${(b / 1048576).toFixed(1)} MiB`;

  const lines = [`\nsoak finished after ${seconds.toFixed(0)} s (switchboard exit code ${exit.code})`];
  for (const [kind, s] of Object.entries(stats)) {
    const sorted = [...s.latencies].sort((a, b) => a - b);
    const steady = [...s.steady].sort((a, b) => a - b);
    lines.push(
      `  ${kind.padEnd(7)} ${String(s.ok).padStart(7)} ok  ${(s.ok / seconds).toFixed(1).padStart(6)}/s  ` +
        `p50 ${percentile(sorted, 50).toFixed(1)} ms  p99 ${percentile(sorted, 99).toFixed(1)} ms  max ${(sorted.at(-1) ?? 0).toFixed(0)} ms  ` +
        `(after warm-up: p50 ${percentile(steady, 50).toFixed(1)} ms, p99 ${percentile(steady, 99).toFixed(1)} ms)  errors ${s.errors}` +
        (s.firstErrors.length > 0 ? `\n          first errors: ${s.firstErrors.join(' | ')}` : ''),
    );
  }
  const errors = stats.ingest.errors + stats.read.errors + stats.replay.errors;
  lines.push(`  skipped starts (in-flight cap reached): ${skipped}`);
  lines.push(`  acknowledged deliveries not stored: ${missing}`);
  lines.push(
    `  server RSS: ${mib(startRss)} after ${(warmupMs / 1000).toFixed(0)} s warm-up → ${mib(endRss)} at the end ` +
      `(${(growth * 100).toFixed(1)} %; max ${mib(maxRss)}; first sample ${mib(rssSamples[0]?.rss ?? 0)})`,
  );
  // Skipped starts are the load generator's own back-pressure (its in-flight cap), reported but
  // not a failure of the server: every request that was sent is in the error count.
  const pass = errors === 0 && missing === 0 && growth <= maxRssGrowth && exit.code === 0;
  lines.push(
    `  result: ${pass ? 'PASS' : 'FAIL'} (needs 0 errors, nothing lost, RSS growth ≤ ${(maxRssGrowth * 100).toFixed(0)} %, clean exit)`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
  process.stdout.write(
    `${JSON.stringify({
      soak: { seconds: Math.round(seconds), ingestRate, readRate, replayRate },
      ...Object.fromEntries(
        Object.entries(stats).map(([kind, s]) => {
          const steady = [...s.steady].sort((a, b) => a - b);
          return [kind, { ok: s.ok, errors: s.errors, p99Ms: Math.round(percentile(steady, 99) * 10) / 10 }];
        }),
      ),
      rss: { start: startRss, end: endRss, max: maxRss, growth },
      missing,
      skipped,
      pass,
      run: randomUUID(),
    })}\n`,
  );
  return pass ? 0 : 1;
}

process.exitCode = await main();
