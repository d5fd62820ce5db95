/**
 * Reply benchmark: what switchboard adds to a provider's wait when it passes the delivery to the
 * app and returns its answer (config: reply). The real product (`switchboard serve`, a child
 * process) receives Discord interactions, signed with Ed25519, at a fixed rate; a consumer in this
 * process answers at once. The same consumer is reached directly in the same run, at the same
 * rate, and the difference of the two latency distributions is what switchboard adds (verify,
 * store and commit, read back, send, answer). Prints p50 and p99 of each, and of the difference.
 *
 *   npx tsx bench/reply.ts [--rate 50] [--seconds 10]
 *
 * Wall-clock figures: they mean something only on a quiet machine. DATABASE_URL's server is used
 * when set (a database of its own, created and dropped); otherwise an embedded PostgreSQL.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createLogger } from '../src/log/logger.ts';
import { spawnSwitchboard } from '../test/support/spawn-switchboard.ts';
import { openBenchDatabase } from './bench-database.ts';
import { percentile } from './load-driver.ts';

const { values } = parseArgs({
  options: { rate: { type: 'string', default: '50' }, seconds: { type: 'string', default: '10' } },
});
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const PUBLIC_KEY = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex');
const ANSWER = JSON.stringify({ type: 4, data: { content: 'pong' } });

/** A signed application command, as Discord posts it; each has an id of its own. */
function interaction(n: number): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    id: `${(BigInt(Date.now()) << 22n) + BigInt(n)}`,
    application_id: '1187290427837456384',
    type: 2,
    data: { id: '1', name: 'ping', type: 1 },
    token: 'aW50ZXJhY3Rpb24',
    version: 1,
  });
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = sign(null, Buffer.from(`${timestamp}${body}`), privateKey).toString('hex');
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-signature-ed25519': signature,
      'x-signature-timestamp': timestamp,
    },
  };
}

/** The app: reads the request and answers at once. */
async function startApp(): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(ANSWER);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** Open-loop load at RATE per second for SECONDS: each request's time to its whole answer, sorted. */
async function measure(url: string): Promise<{ ms: number[]; errors: number }> {
  const total = RATE * SECONDS;
  const ms: number[] = [];
  let errors = 0;
  const started = performance.now();
  const sends: Promise<void>[] = [];
  for (let n = 0; n < total; n += 1) {
    const due = started + (n * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const { body, headers } = interaction(n);
    const sent = performance.now();
    sends.push(
      fetch(url, { method: 'POST', body, headers }).then(
        async (res) => {
          const text = await res.text();
          if (res.status !== 200 || text !== ANSWER) errors += 1;
          else ms.push(performance.now() - sent);
        },
        () => {
          errors += 1;
        },
      ),
    );
  }
  await Promise.all(sends);
  return { ms: ms.sort((a, b) => a - b), errors };
}

const fixed = (n: number): string => n.toFixed(2);

async function main(): Promise<void> {
  const logger = createLogger({ level: 'warn' });
  const database = await openBenchDatabase(logger, 'sb_bench_reply');
  const app = await startApp();
  const server = await spawnSwitchboard({
    config: [
      'providers:',
      `  discord: { preset: discord, public_key: "${PUBLIC_KEY}", reply: { from: bot } }`,
      'forward:',
      `  bot: { to: "${app.origin}/interactions" }`,
      '',
    ].join('\n'),
    databaseUrl: database.url,
    logLevel: 'warn',
  });
  try {
    // Warm both paths (connections, JIT, the statement plans) before measuring.
    await measure(`${app.origin}/interactions`);
    await measure(`${server.url}/hooks/discord`);
    const direct = await measure(`${app.origin}/interactions`);
    const through = await measure(`${server.url}/hooks/discord`);
    const row = (name: string, r: { ms: number[]; errors: number }) =>
      `${name}: p50 ${fixed(percentile(r.ms, 50))} ms, p99 ${fixed(percentile(r.ms, 99))} ms, ${r.ms.length} answered, ${r.errors} errors`;
    process.stdout.write(
      [
        `reply bench: ${RATE} req/s for ${SECONDS} s, database ${database.where}`,
        row('direct to the app', direct),
        row('through switchboard', through),
        `added by switchboard: p50 ${fixed(percentile(through.ms, 50) - percentile(direct.ms, 50))} ms, p99 ${fixed(
          percentile(through.ms, 99) - percentile(direct.ms, 99),
        )} ms (targets: p50 <= 5 ms, p99 <= 20 ms)`,
        '',
      ].join('\n'),
    );
  } finally {
    await server.stop();
    server.cleanup();
    await new Promise<void>((resolve) => app.server.close(() => resolve()));
    await database.close();
  }
}

await main();
