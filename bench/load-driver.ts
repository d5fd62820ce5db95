/**
 * A load of signed GitHub deliveries against a running switchboard, recording the outcome of
 * every single request (not just counts), so callers can check what happened to each delivery
 * that was acknowledged: the crash-safety test compares every 2xx against the stored bytes, and
 * the soak reports throughput, p99 and errors from the same records.
 *
 * Two shapes of load:
 *   - closed loop (default): `concurrency` workers, each sending its next delivery as soon as the
 *     previous one is answered;
 *   - fixed rate (`ratePerSecond`): deliveries start on a schedule whatever the answers, with at
 *     most `concurrency` in flight (a request that would exceed it is counted as `skipped`, so an
 *     overloaded server shows up in the report instead of silently slowing the schedule).
 *
 * Bounded always: by durationMs, maxRequests and/or an AbortSignal; at least one must be given.
 * Loopback only: the URL must point at 127.0.0.0/8 or ::1.
 *
 * Signatures come from @octokit/webhooks-methods, GitHub's own library, not from switchboard.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { sign } from '@octokit/webhooks-methods';
import { Pool } from 'undici';

export interface GithubDelivery {
  deliveryId: string;
  event: string;
  /** The exact bytes sent (and signed). */
  body: Buffer;
  signature: string;
}

export interface DeliveryOutcome {
  delivery: GithubDelivery;
  /** HTTP status, or null when no answer arrived (connection refused or reset, timeout). */
  status: number | null;
  /** The event id switchboard answered with on 200. */
  id: string | null;
  duplicate: boolean;
  /** Why no answer arrived, or the answer's error message. */
  error: string | null;
  /** performance.now() when the request started. */
  startedAt: number;
  latencyMs: number;
}

export interface LoadOptions {
  /** http://127.0.0.1:PORT */
  baseUrl: string;
  /** Default /hooks/github. */
  path?: string;
  secret: string;
  /** Workers (closed loop) or most requests in flight (fixed rate). Default 8. */
  concurrency?: number;
  /** Fixed-rate mode: deliveries started per second. */
  ratePerSecond?: number;
  durationMs?: number;
  maxRequests?: number;
  signal?: AbortSignal;
  /** Per-request timeout; default 15 s. */
  requestTimeoutMs?: number;
  /** The body of delivery n; default a seeded generator of byte-sensitive JSON (see makePayload). */
  payload?: (n: number) => Buffer;
  /** Seed for the default payload generator. */
  seed?: number;
  /** Called as each outcome is known. */
  onOutcome?: (outcome: DeliveryOutcome) => void;
}

export interface LoadReport {
  outcomes: DeliveryOutcome[];
  sent: number;
  /** 2xx answers. */
  ok: number;
  /** Answers with another status. */
  non2xx: number;
  /** No answer at all. */
  failed: number;
  /** Fixed-rate mode: starts dropped because `concurrency` requests were already in flight. */
  skipped: number;
  durationMs: number;
  latencyMs: { p50: number; p99: number; max: number };
  /** 2xx per second over the run. */
  throughput: number;
}

/** mulberry32: a small seeded PRNG, so a failing run can be reproduced from its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ODD_TEXT = [
  'plain',
  'ünïcödé',
  '日本語テキスト',
  'emoji 🚀🔥',
  'quote " and \\ backslash',
  'tab\tand\nnewline',
  '\u2028\u2029',
  'zero\u200bwidth',
];
const ODD_NUMBERS = ['1.0', '1e2', '-0', '12345678901234567890', '0.1000', '1E-7'];

/**
 * JSON that any re-serialisation would change: irregular whitespace, numbers written in
 * non-canonical forms, literal non-ASCII and escaped \u sequences, a repeated key. Only a store
 * that keeps the exact bytes gets every one of these back unchanged. Sizes vary from ~100 B to
 * several KiB.
 */
export function makePayload(random: () => number, n: number): Buffer {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const space = (): string => pick(['', ' ', '  ', '\n', '\t', ' \n  ']);
  const fields: string[] = [
    `"action":${space()}"opened"`,
    `"n":${space()}${n}`,
    `"number":${space()}${pick(ODD_NUMBERS)}`,
    `"title":${space()}${JSON.stringify(pick(ODD_TEXT))}`,
    `"escaped":${space()}"\\u00e9\\u65e5\\ud83d\\ude80"`,
    `"dup":${space()}1`,
    `"dup":${space()}2`,
  ];
  const filler = Math.floor(random() * random() * 6000);
  if (filler > 0) fields.push(`"filler":"${'x'.repeat(filler)}"`);
  fields.push(`"repository":{${space()}"full_name":"octo/repo-${n % 17}"${space()}}`);
  return Buffer.from(`{${space()}${fields.join(`,${space()}`)}${space()}}`, 'utf8');
}

export async function makeGithubDelivery(secret: string, body: Buffer, event = 'issues'): Promise<GithubDelivery> {
  // The body is UTF-8 text (a JSON document); octokit signs the string's UTF-8 bytes, which are exactly `body`.
  const signature = await sign(secret, body.toString('utf8'));
  return { deliveryId: randomUUID(), event, body, signature };
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? 0;
}

function assertLoopback(baseUrl: string): void {
  const host = new URL(baseUrl).hostname;
  if (!(host.startsWith('127.') || host === '[::1]' || host === 'localhost')) {
    throw new Error(`load-driver sends only to loopback addresses, not ${host}`);
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}

export async function runGithubLoad(options: LoadOptions): Promise<LoadReport> {
  assertLoopback(options.baseUrl);
  if (options.durationMs === undefined && options.maxRequests === undefined && options.signal === undefined) {
    throw new Error('runGithubLoad needs a bound: durationMs, maxRequests or signal');
  }
  const concurrency = Math.max(1, options.concurrency ?? 8);
  const path = options.path ?? '/hooks/github';
  const timeoutMs = options.requestTimeoutMs ?? 15_000;
  const random = seededRandom(options.seed ?? 1);
  const payload = options.payload ?? ((n: number) => makePayload(random, n));
  const pool = new Pool(options.baseUrl, { connections: concurrency, pipelining: 1, keepAliveTimeout: 4_000 });
  const outcomes: DeliveryOutcome[] = [];
  const started = performance.now();
  const deadline = options.durationMs === undefined ? Number.POSITIVE_INFINITY : started + options.durationMs;
  let issued = 0;
  let skipped = 0;

  const more = (): boolean =>
    performance.now() < deadline &&
    options.signal?.aborted !== true &&
    (options.maxRequests === undefined || issued < options.maxRequests);

  const sendOne = async (): Promise<DeliveryOutcome> => {
    const n = issued;
    issued += 1;
    const delivery = await makeGithubDelivery(options.secret, payload(n));
    const startedAt = performance.now();
    let outcome: DeliveryOutcome;
    try {
      const response = await pool.request({
        method: 'POST',
        path,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'GitHub-Hookshot/load-driver',
          'x-github-event': delivery.event,
          'x-github-delivery': delivery.deliveryId,
          'x-hub-signature-256': delivery.signature,
        },
        body: delivery.body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const text = await response.body.text();
      let id: string | null = null;
      let duplicate = false;
      let error: string | null = null;
      try {
        const parsed = JSON.parse(text) as { id?: unknown; duplicate?: unknown; error?: { message?: unknown } };
        if (typeof parsed.id === 'string') id = parsed.id;
        duplicate = parsed.duplicate === true;
        if (typeof parsed.error?.message === 'string') error = parsed.error.message;
      } catch {
        error = `unparseable answer: ${text.slice(0, 200)}`;
      }
      outcome = {
        delivery,
        status: response.statusCode,
        id,
        duplicate,
        error,
        startedAt,
        latencyMs: performance.now() - startedAt,
      };
    } catch (error: unknown) {
      outcome = {
        delivery,
        status: null,
        id: null,
        duplicate: false,
        error: describeError(error),
        startedAt,
        latencyMs: performance.now() - startedAt,
      };
    }
    outcomes.push(outcome);
    options.onOutcome?.(outcome);
    return outcome;
  };

  try {
    if (options.ratePerSecond === undefined) {
      const worker = async (): Promise<void> => {
        while (more()) {
          const outcome = await sendOne();
          // A server that is gone refuses instantly: pause briefly instead of spinning on refusals.
          if (outcome.status === null) await delay(20);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, () => worker()));
    } else {
      const intervalMs = 1000 / options.ratePerSecond;
      const inFlight = new Set<Promise<DeliveryOutcome>>();
      for (let k = 0; more(); k += 1) {
        const due = started + k * intervalMs;
        const wait = due - performance.now();
        if (wait > 0) await delay(wait);
        if (!more()) break;
        if (inFlight.size >= concurrency) {
          skipped += 1;
          continue;
        }
        const request = sendOne();
        inFlight.add(request);
        void request.finally(() => inFlight.delete(request));
      }
      await Promise.all(inFlight);
    }
  } finally {
    await pool.destroy().catch(() => undefined);
  }

  const durationMs = performance.now() - started;
  const latencies = outcomes
    .filter((o) => o.status !== null)
    .map((o) => o.latencyMs)
    .sort((a, b) => a - b);
  const ok = outcomes.filter((o) => o.status !== null && o.status >= 200 && o.status < 300).length;
  const failed = outcomes.filter((o) => o.status === null).length;
  return {
    outcomes,
    sent: outcomes.length,
    ok,
    non2xx: outcomes.length - ok - failed,
    failed,
    skipped,
    durationMs,
    latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1) ?? 0 },
    throughput: ok / (durationMs / 1000),
  };
}
