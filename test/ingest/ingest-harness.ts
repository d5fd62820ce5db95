/**
 * A real switchboard ingest path for tests: createApp with the ingest surface, the PostgreSQL
 * store on a fresh database, and the LISTEN/NOTIFY bus, served on 127.0.0.1 port 0.
 */
import type { Server } from 'node:http';
import { sql } from 'slonik';
import type { Provider } from '../../generated/types.ts';
import { createPostgresEventBus, type PostgresEventBus } from '../../src/bus/postgres-event-bus.ts';
import { createApp } from '../../src/http/create-app.ts';
import { createIngestSurface, type IngestSurfaceOptions } from '../../src/ingest/ingest-surface.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { EventStore, StoredEvent } from '../../src/store/event-store.ts';
import { createEventStore, type PgEventStore } from '../../src/store/pg-event-store.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';
import { providersFrom } from '../support/providers.ts';
import { listenLocal } from '../support/local-server.ts';

export interface Harness {
  url: string;
  db: TestDatabase;
  store: PgEventStore;
  bus: PostgresEventBus;
  server: Server;
  /** Every stored event of a provider (or all), oldest first. */
  rows(provider?: string): Promise<StoredEvent[]>;
  /** Each row as PostgreSQL's own JSON text, headers and verify_detail included, for leak scans. */
  rawRows(): Promise<string[]>;
  close(): Promise<void>;
}

export interface HarnessOptions extends Partial<Pick<IngestSurfaceOptions, 'now' | 'groupCommit' | 'commitTimeoutMs'>> {
  providers: Record<string, Provider>;
  /** Serve with this store instead of the fresh database's (e.g. one whose database goes away). */
  store?: EventStore;
  db?: TestDatabase;
  trustProxy?: boolean;
  /** Default: a silent logger. */
  logger?: Logger;
}

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const db = options.db ?? (await freshDatabase({ maximumPoolSize: 10 }));
  const store = createEventStore(db.pool);
  const bus = createPostgresEventBus({ databaseUrl: db.url, logger: silentLogger });
  await bus.ready();
  const logger = options.logger ?? silentLogger;
  const app = createApp({
    logger,
    isDatabaseUp: async () => true,
    trustProxy: options.trustProxy ?? false,
    surfaces: [
      createIngestSurface({
        providers: providersFrom(options.providers),
        store: options.store ?? store,
        logger,
        now: options.now,
        groupCommit: options.groupCommit,
        commitTimeoutMs: options.commitTimeoutMs,
      }),
    ],
  });
  const listening = await listenLocal(app.callback());
  const { server } = listening;

  const rows = async (provider?: string): Promise<StoredEvent[]> => {
    const ids = await db.pool.anyFirst(
      provider === undefined
        ? sql.unsafe`SELECT id FROM events ORDER BY received_at, id`
        : sql.unsafe`SELECT id FROM events WHERE provider = ${provider} ORDER BY received_at, id`,
    );
    const events = await Promise.all(ids.map((id) => store.get(String(id))));
    return events.filter((e): e is StoredEvent => e !== null);
  };

  return {
    url: listening.origin,
    db,
    store,
    bus,
    server,
    rows,
    rawRows: async () => (await db.pool.anyFirst(sql.unsafe`SELECT row_to_json(events)::text FROM events`)).map(String),
    async close() {
      await listening.close();
      await bus.close();
      if (options.db === undefined) await db.close();
    },
  };
}

export interface Delivery {
  status: number;
  headers: Headers;
  json: unknown;
  text: string;
}

export async function post(
  url: string,
  body: Buffer | string,
  headers: Record<string, string> = {},
): Promise<Delivery> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
  const text = await response.text();
  let json: unknown = undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, json, text };
}

/** The id a 200 answered with. */
export function acceptedId(delivery: Delivery): string {
  const json = delivery.json as { id?: unknown } | undefined;
  if (typeof json?.id !== 'string') throw new Error(`no id in ${delivery.status} ${delivery.text}`);
  return json.id;
}
