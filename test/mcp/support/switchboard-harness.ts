/**
 * A real switchboard for MCP tests: the product's wiring (buildSurfaces) on a fresh database,
 * served on 127.0.0.1 port 0, every log line captured. Clients are the official SDK Client over
 * real HTTP.
 */
import type { Server } from 'node:http';
import { Writable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Middleware } from 'koa';
import type { SwitchboardConfig } from '../../../generated/types.ts';
import type { RateLimiter } from '../../../src/auth/rate-limiter.ts';
import type { PostgresEventBus } from '../../../src/bus/postgres-event-bus.ts';
import { resolveConfig, type ResolvedConfig } from '../../../src/config/resolve-config.ts';
import { createLogger, type Logger } from '../../../src/log/logger.ts';
import type { McpSurface } from '../../../src/mcp/create-mcp-surface.ts';
import type { OutboundOptions } from '../../../src/outbound/deliver-event.ts';
import type { ReplayService } from '../../../src/replay/replay-types.ts';
import type { EventStore } from '../../../src/store/events/event-store.ts';
import type { PgEventStore } from '../../../src/store/events/pg-event-store.ts';
import type { TokenRepository } from '../../../src/store/records/token-repository.ts';
import { freshDatabase, type TestDatabase } from '../../support/database.ts';
import { serveSurfaces } from '../../support/serve-surfaces.ts';

export const GITHUB_SECRET = 'gh-secret-9f8e7d6c5b4a39281706';
export const STRIPE_SECRET = 'whsec_c3RyaXBlLXNlY3JldC1mb3ItdGVzdHM';
export const HOOK_TOKEN = 'hook-token-5a4b3c2d1e0f99887766';

/** One provider of every secret_status class and family. */
export const STANDARD_PROVIDERS: NonNullable<SwitchboardConfig['providers']> = {
  github: { preset: 'github', secret: GITHUB_SECRET },
  stripe: { preset: 'stripe', secret: STRIPE_SECRET },
  linear: { preset: 'linear' },
  hook: { trust_mode: 'token', token: HOOK_TOKEN },
  open: { trust_mode: 'open', event_type_from: '/type' },
  jobs: { family: 'queue', channel: 'jobs' },
};

export interface HarnessOptions {
  /** How the CLI runs where the server runs (the hints in 401s name it); default `switchboard`. */
  cliCommand?: string;
  config?: SwitchboardConfig;
  /** Serve with this store instead of the fresh database's (e.g. one whose pool is closed). */
  store?: EventStore;
  /** Use this database (and do not drop it on close). */
  db?: TestDatabase;
  envToken?: string;
  /** Ids published to the bus by the ingest surface are real; tests may also publish. */
  notifyIntervalMs?: number;
  keepAliveMs?: number;
  /** Idle time before a session ends, under the schema's 5 s minimum so a test need not wait that long. */
  sessionIdleSeconds?: number;
  /** Wraps the real sending path's resolver and connector, to observe DNS lookups and connections. */
  replayObserver?: Pick<OutboundOptions, 'resolver' | 'onConnect'>;
  /** Extra surfaces tried before MCP (tests of auth on other paths). */
  extraSurfaces?: (deps: { authenticate: Middleware; checkHost: Middleware }) => Middleware[];
}

export interface Harness {
  /** http://127.0.0.1:<port> */
  origin: string;
  /** The /mcp endpoint. */
  url: URL;
  port: number;
  /** A managed token named "agent". */
  token: string;
  db: TestDatabase;
  store: PgEventStore;
  tokens: TokenRepository;
  bus: PostgresEventBus;
  config: ResolvedConfig;
  limiter: RateLimiter;
  replay: ReplayService;
  surface: McpSurface;
  server: Server;
  /** Every log line written so far, parsed. */
  logs: Array<Record<string, unknown>>;
  /** An official SDK client connected over HTTP with this bearer token (default: the agent token), tools listed. */
  connect(token?: string, options?: { onResponseText?: (text: string) => void }): Promise<Client>;
  /** Ends the client's session the way a polite client does (HTTP DELETE), then closes it. */
  disconnect(client: Client): Promise<void>;
  close(): Promise<void>;
}

function capturingLogger(lines: Array<Record<string, unknown>>): Logger {
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      callback();
    },
  });
  return createLogger({ level: 'debug', destination });
}

/** fetch that hands every byte of every response body (SSE streams included) to record, as it arrives. */
function recordingFetch(record: (text: string) => void): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (response.body === null) return response;
    const [forClient, forRecord] = response.body.tee();
    void (async () => {
      const decoder = new TextDecoder();
      const reader = (forRecord as ReadableStream<Uint8Array>).getReader();
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true as const }));
        if (done) break;
        record(decoder.decode(value, { stream: true }));
      }
    })();
    return new Response(forClient, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

export async function startMcpHarness(options: HarnessOptions = {}): Promise<Harness> {
  const ownDb = options.db === undefined;
  const db = options.db ?? (await freshDatabase({ maximumPoolSize: 10 }));
  const logs: Array<Record<string, unknown>> = [];
  const logger = capturingLogger(logs);
  const resolved = resolveConfig({ providers: STANDARD_PROVIDERS, ...options.config });
  // Under the schema's 5 s minimum, so a test need not wait that long: set past the validation.
  const config: ResolvedConfig =
    options.sessionIdleSeconds === undefined
      ? resolved
      : { ...resolved, mcp: { ...resolved.mcp, sessionIdleSeconds: options.sessionIdleSeconds } };
  const served = await serveSurfaces({
    config,
    logger,
    pool: db.pool,
    databaseUrl: db.url,
    envToken: options.envToken,
    ...(options.cliCommand === undefined ? {} : { cliCommand: options.cliCommand }),
    overrides: {
      withoutJobs: { queueConnection: 'connected' },
      ...(options.store ? { store: options.store } : {}),
      ...(options.replayObserver ? { outbound: options.replayObserver } : {}),
      ...(options.extraSurfaces ? { surfacesFirst: options.extraSurfaces } : {}),
      mcp: {
        notifyIntervalMs: options.notifyIntervalMs,
        keepAliveMs: options.keepAliveMs,
      },
    },
  });
  const { surfaces, port, url: origin } = served;
  const { tokens } = surfaces;
  const { token } = await tokens.create(`agent-${Math.random().toString(36).slice(2, 8)}`);
  const clients: Client[] = [];

  return {
    origin,
    url: new URL('/mcp', origin),
    port,
    token,
    db,
    store: surfaces.store,
    tokens,
    bus: surfaces.bus,
    config,
    limiter: surfaces.limiter,
    replay: surfaces.replay,
    surface: surfaces.mcp,
    server: served.server,
    logs,
    async connect(bearer = token, connectOptions = {}) {
      const client = new Client({ name: 'switchboard-test', version: '1.0.0' });
      const record = connectOptions.onResponseText;
      const transport = new StreamableHTTPClientTransport(new URL('/mcp', origin), {
        requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
        ...(record === undefined ? {} : { fetch: recordingFetch(record) }),
      });
      await client.connect(transport);
      // Listing the tools makes the client validate every structuredContent against its outputSchema.
      await client.listTools();
      clients.push(client);
      return client;
    },
    async disconnect(client) {
      const transport = client.transport;
      if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession();
      await client.close();
    },
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await served.close();
      if (ownDb) await db.close();
    },
  };
}
