/**
 * What Koa itself costs per request (issue 40, the lean webhook handler): the same receiver on
 * node's http server as it is and under Koa, each reading a 2 KiB body and answering a small JSON
 * 200, measured as server CPU per request (process.cpuUsage in the server's own process). What
 * Koa adds is the most a handler outside Koa's stack could save per webhook; the ADR
 * (docs/adr/ingest-minimum-work.md) sets it against switchboard's server CPU per stored delivery.
 *
 *   npx tsx bench/koa-overhead.ts [--seconds 5] [--rounds 3] [--connections 50]
 *
 * Each server is a child process of its own, warmed for 2 s, then loaded by autocannon for
 * --seconds; rounds rotate which goes first. Prints each run's steal and the median per kind.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Koa from 'koa';
import { cpuTicks, stealShare } from './cpu-ticks.ts';

type Kind = 'node' | 'koa';

// autocannon has no type declarations; this is the part of its API the benchmark uses.
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  method: 'POST';
  body: Buffer;
}) => Promise<{ requests: { total: number }; non2xx: number; errors: number }>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const { values } = parseArgs({
  options: {
    serve: { type: 'string' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
  },
});

/** Reads the whole body, as ingest does, and answers what ingest answers a stored delivery. */
async function answer(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.stringify({ id: '0190f2a8-0000-7000-8000-000000000000', duplicate: Buffer.concat(chunks).length === 0 });
}

function listener(kind: Kind): RequestListener {
  if (kind === 'node') {
    return (req: IncomingMessage, res: ServerResponse) => {
      void answer(req).then((body) => {
        res.writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(body),
        });
        res.end(body);
      });
    };
  }
  const app = new Koa();
  app.use(async (ctx) => {
    ctx.status = 200;
    ctx.body = JSON.parse(await answer(ctx.req)) as unknown;
  });
  const handle = app.callback();
  return (req, res) => {
    void handle(req, res);
  };
}

/** The child: serves, and reports its CPU between 'start' and 'stop'. */
function serve(kind: Kind): void {
  const server = createServer(listener(kind)).listen(0, '127.0.0.1', () => {
    process.send?.({ port: (server.address() as AddressInfo).port });
  });
  let start = process.cpuUsage();
  process.on('message', (message: unknown) => {
    if (message === 'start') start = process.cpuUsage();
    if (message === 'stop') {
      const used = process.cpuUsage(start);
      process.send?.({ cpuMicros: used.user + used.system }, () => process.exit(0));
    }
  });
}

async function measure(
  kind: Kind,
  seconds: number,
  connections: number,
): Promise<{ perRequest: number; steal: number | undefined }> {
  const child = fork(fileURLToPath(import.meta.url), ['--serve', kind], { execArgv: ['--import', 'tsx'] });
  const [ready] = (await once(child, 'message')) as [{ port: number }];
  const url = `http://127.0.0.1:${ready.port}/hooks/bench`;
  const body = Buffer.alloc(2048, 'a');
  await autocannon({ url, connections, duration: 2, method: 'POST', body });
  const ticks = cpuTicks();
  child.send('start');
  const result = await autocannon({ url, connections, duration: seconds, method: 'POST', body });
  child.send('stop');
  const [report] = (await once(child, 'message')) as [{ cpuMicros: number }];
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${kind}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { perRequest: report.cpuMicros / result.requests.total, steal: stealShare(ticks, cpuTicks()) };
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

if (values.serve === 'node' || values.serve === 'koa') {
  serve(values.serve);
} else {
  const rounds = Number(values.rounds);
  const perKind: Record<Kind, number[]> = { node: [], koa: [] };
  for (let round = 1; round <= rounds; round++) {
    for (const kind of round % 2 === 1 ? (['node', 'koa'] as const) : (['koa', 'node'] as const)) {
      const { perRequest, steal } = await measure(kind, Number(values.seconds), Number(values.connections));
      perKind[kind].push(perRequest);
      const stolen = steal === undefined ? '–' : `${(steal * 100).toFixed(1)} %`;
      process.stdout.write(
        `round ${round} ${kind.padEnd(4)} ${perRequest.toFixed(1)} µs server CPU a request, steal ${stolen}\n`,
      );
    }
  }
  const node = median(perKind.node);
  const koa = median(perKind.koa);
  process.stdout.write(
    `median: node ${node.toFixed(1)} µs, Koa ${koa.toFixed(1)} µs a request; Koa adds ${(koa - node).toFixed(1)} µs (${(koa / node).toFixed(2)}×)\n`,
  );
}
