/**
 * A small stand-in for a switchboard server on 127.0.0.1, for `switchboard listen` tests: it serves
 * the five API calls listen makes (providers, provider detail, the event list, replay headers,
 * raw bytes) and the event stream from an in-memory list, and any route can be replaced by a
 * handler that misbehaves on purpose. Every request is recorded.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LIST_LIMIT } from '../../../generated/constants.ts';
import type { ApiEventSummary, ApiReplayHeaders, ProviderStatus } from '../../../generated/types.ts';
import { listenLocal, type Listening } from '../../support/local-server.ts';

export interface FakeEvent {
  summary: ApiEventSummary;
  replay: ApiReplayHeaders;
  body: Buffer;
}

type Route = 'providers' | 'provider' | 'events' | 'replay-headers' | 'raw' | 'stream';

type RouteHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => void;

export interface FakeSwitchboard {
  /** http://127.0.0.1:port/ */
  url: string;
  /** Events in list order (oldest first). */
  events: FakeEvent[];
  /** Each request as `GET /api/…?…`, in arrival order. */
  requests: string[];
  /** Replaces how a route answers, until reset(). */
  on(route: Route, handler: RouteHandler): void;
  /** Back to the well-behaved defaults, no events, no recorded requests; open streams are cut. */
  reset(): void;
  /** Sends an event to every open stream (it must be in `events` for the list to give it). */
  announce(event: FakeEvent): void;
  close(): Promise<void>;
}

export const PROVIDERS: ProviderStatus[] = [
  {
    name: 'github',
    family: 'webhook',
    preset: 'github',
    trust_mode: 'signed',
    enabled: true,
    secret_status: 'configured',
    route: '/hooks/github',
  },
  {
    name: 'sandbox',
    family: 'webhook',
    preset: 'open',
    trust_mode: 'open',
    enabled: true,
    secret_status: 'none-by-design',
  },
];

let clock = Date.parse('2025-01-31T12:00:00Z');

/** A new event received one millisecond after the last one made, or at `receivedAt`. */
export function fakeEvent(
  fields: {
    id?: string;
    provider?: string;
    eventType?: string;
    body?: string;
    passedCheck?: boolean | null;
    receivedAt?: string;
  } = {},
): FakeEvent {
  clock += 1;
  const provider = fields.provider ?? 'sandbox';
  const id = fields.id ?? randomUUID();
  const body = Buffer.from(fields.body ?? `{"n":"${id}"}`);
  const trustMode = provider === 'github' ? 'signed' : 'open';
  const passedCheck = fields.passedCheck === undefined ? (trustMode === 'open' ? null : true) : fields.passedCheck;
  return {
    summary: {
      id,
      provider,
      event_type: fields.eventType ?? 'ping',
      trust_mode: trustMode,
      verified: passedCheck !== false,
      payload_size: body.length,
      received_at: fields.receivedAt ?? new Date(clock).toISOString().replace('Z', '123Z'),
    },
    replay: {
      id,
      provider,
      trust_mode: trustMode,
      passed_check: passedCheck,
      handshake: false,
      headers: { 'content-type': 'application/json', 'x-switchboard-replay': id },
    },
    body,
  };
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(value));
}

export function answerError(res: ServerResponse, status: number, code: string, message: string): void {
  json(res, status, { error: { code, message } });
}

/** The list as switchboard pages it: newest first by default; oldest first after `since`, cursor = offset. */
function listEvents(fake: FakeSwitchboard, res: ServerResponse, url: URL): void {
  const limit = Number(url.searchParams.get('limit') ?? LIST_LIMIT.default);
  if (url.searchParams.get('order') !== 'oldest_first') {
    json(res, 200, {
      events: fake.events
        .slice(-limit)
        .reverse()
        .map((e) => e.summary),
    });
    return;
  }
  let after = fake.events;
  const since = url.searchParams.get('since');
  if (since !== null && /^[0-9a-f-]{36}$/.test(since)) {
    const at = fake.events.findIndex((e) => e.summary.id === since);
    if (at === -1) return answerError(res, 400, 'invalid_argument', `since: no event with id ${since}`);
    after = fake.events.slice(at + 1);
  } else if (since !== null) {
    after = fake.events.filter((e) => e.summary.received_at > since);
  }
  const offset = Number(url.searchParams.get('cursor') ?? '0');
  const page = after.slice(offset, offset + limit);
  const more = offset + limit < after.length;
  json(res, 200, { events: page.map((e) => e.summary), ...(more ? { next_cursor: String(offset + limit) } : {}) });
}

export async function startFakeSwitchboard(): Promise<FakeSwitchboard> {
  const overrides = new Map<Route, RouteHandler>();
  const streams = new Set<ServerResponse>();
  const byId = (url: URL): FakeEvent | undefined => fake.events.find((e) => url.pathname.includes(e.summary.id));

  const defaults: Record<Route, RouteHandler> = {
    providers: (_req, res) => json(res, 200, { providers: PROVIDERS }),
    provider: (_req, res, url) => {
      const provider = PROVIDERS.find((p) => url.pathname.endsWith(`/${p.name}`));
      if (provider === undefined) answerError(res, 404, 'not_found', 'no such provider');
      else json(res, 200, { provider });
    },
    events: (_req, res, url) => listEvents(fake, res, url),
    'replay-headers': (_req, res, url) => {
      const event = byId(url);
      if (event === undefined) answerError(res, 404, 'not_found', 'no such event');
      else json(res, 200, event.replay);
    },
    raw: (_req, res, url) => {
      const event = byId(url);
      if (event === undefined) return answerError(res, 404, 'not_found', 'no such event');
      res.setHeader('content-type', 'application/octet-stream');
      res.end(event.body);
    },
    stream: (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
      res.write(': connected\n\n');
      streams.add(res);
      res.on('close', () => streams.delete(res));
    },
  };

  const routeOf = (path: string): Route | undefined => {
    if (path === '/api/providers') return 'providers';
    if (path.startsWith('/api/providers/')) return 'provider';
    if (path === '/api/events') return 'events';
    if (path.endsWith('/replay-headers')) return 'replay-headers';
    if (path.endsWith('/raw')) return 'raw';
    if (path === '/api/stream') return 'stream';
    return undefined;
  };

  const server: Listening = await listenLocal((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    fake.requests.push(`${req.method ?? ''} ${url.pathname}${url.search}`);
    const route = routeOf(url.pathname);
    if (route === undefined) return answerError(res, 404, 'not_found', 'no such route');
    (overrides.get(route) ?? defaults[route])(req, res, url);
  });

  const fake: FakeSwitchboard = {
    url: `${server.origin}/`,
    events: [],
    requests: [],
    on: (route, handler) => overrides.set(route, handler),
    reset() {
      overrides.clear();
      fake.events = [];
      fake.requests = [];
      for (const res of streams) res.destroy();
      streams.clear();
    },
    announce(event) {
      for (const res of streams)
        res.write(`event: event\nid: ${event.summary.id}\ndata: ${JSON.stringify(event.summary)}\n\n`);
    },
    close: () => server.close(),
  };
  return fake;
}

/**
 * Writes `total` bytes of `chunk` repeated, honouring backpressure, until done or the client goes
 * away; resolves with the bytes written (what the client was made to take in).
 */
export function flood(res: ServerResponse, chunk: Buffer, total: number): Promise<number> {
  return new Promise((resolve) => {
    let written = 0;
    let gone = false;
    res.on('close', () => {
      gone = true;
      resolve(written);
    });
    const pump = (): void => {
      while (!gone && written < total) {
        written += chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      if (!gone) res.end(() => resolve(written));
    };
    pump();
  });
}
