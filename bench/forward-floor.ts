/**
 * The floor under bench/forward.ts's cost section: the same POSTs the worker sent (bodies and
 * headers as the consumer received them, read from a JSON file), sent to the same consumer by a
 * bare undici loop at the same concurrency, on one keep-alive Agent as the worker's (undici's
 * defaults, a connection per request in flight). Prints, as one JSON line, this process's CPU
 * (process.cpuUsage(), as the worker's /metrics counts it) over the loop alone: start-up and the
 * file's parse are outside it, as the worker's are outside its drain.
 *
 *   node --import tsx bench/forward-floor.ts FILE ORIGIN CONCURRENCY
 *
 * Each request is dispatched with a handler that keeps only the status and drops the body, which
 * is the least any client does; the worker's own handler keeps a little more.
 */
import { readFileSync } from 'node:fs';
import { Agent, type Dispatcher } from 'undici';

interface FloorRequest {
  path: string;
  headers: Record<string, string>;
  /** base64 */
  body: string;
}

const [file, origin, concurrencyText] = process.argv.slice(2);
if (file === undefined || origin === undefined || concurrencyText === undefined) {
  throw new Error('usage: forward-floor.ts FILE ORIGIN CONCURRENCY');
}
const target: string = origin;
const requests = (JSON.parse(readFileSync(file, 'utf8')) as FloorRequest[]).map((r) => ({
  path: r.path,
  headers: r.headers,
  body: Buffer.from(r.body, 'base64'),
}));
const agent = new Agent();

function send(request: (typeof requests)[number]): Promise<number> {
  return new Promise((resolve, reject) => {
    let status = 0;
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart() {},
      onResponseStart(_controller, statusCode) {
        status = statusCode;
      },
      onResponseData() {},
      onResponseEnd() {
        resolve(status);
      },
      onResponseError(_controller, error) {
        reject(error);
      },
    };
    agent.dispatch(
      { origin: target, path: request.path, method: 'POST', headers: request.headers, body: request.body },
      handler,
    );
  });
}

async function main(): Promise<void> {
  const concurrency = Number(concurrencyText);
  let next = 0;
  let failed = 0;
  const start = process.cpuUsage();
  const startedAt = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests.length) {
        const request = requests[next];
        next += 1;
        if (request === undefined) break;
        const status = await send(request);
        if (status < 200 || status > 299) failed += 1;
      }
    }),
  );
  const cpu = process.cpuUsage(start);
  const ms = performance.now() - startedAt;
  await agent.close();
  process.stdout.write(
    `${JSON.stringify({ sent: requests.length, failed, user: cpu.user, system: cpu.system, ms })}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(
    `forward floor failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
