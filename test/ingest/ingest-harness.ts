/**
 * A real switchboard for ingest tests: the product's wiring (buildSurfaces) with the given
 * providers, on a fresh database, served on 127.0.0.1 port 0. No background jobs of its own.
 */
import type { Server } from 'node:http';
import { sql } from 'slonik';
import type { Provider, SwitchboardConfig } from '../../generated/types.ts';
import type { PostgresEventBus } from '../../src/bus/postgres-event-bus.ts';
import { resolveConfig } from '../../src/config/resolve-config.ts';
import type { IngestSurfaceOptions } from '../../src/ingest/ingest-surface.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { EventStore, StoredEvent } from '../../src/store/events/event-store.ts';
import type { PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';
import { serveSurfaces } from '../support/serve-surfaces.ts';

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
  /** The rest of the config file (ingest limits, server.public_url…), besides the providers. */
  config?: Omit<SwitchboardConfig, 'providers'>;
  /** Serve with this store instead of the fresh database's (e.g. one whose database goes away). */
  store?: EventStore;
  db?: TestDatabase;
  trustProxy?: boolean;
  /** Default: a silent logger. */
  logger?: Logger;
}

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const db = options.db ?? (await freshDatabase({ maximumPoolSize: 10 }));
  const resolved = resolveConfig({ ...options.config, providers: options.providers });
  const config = { ...resolved, server: { ...resolved.server, trustProxy: options.trustProxy ?? false } };
  const served = await serveSurfaces({
    config,
    logger: options.logger ?? silentLogger,
    pool: db.pool,
    databaseUrl: db.url,
    overrides: {
      withoutJobs: { queueConnection: 'connecting' },
      ...(options.store ? { store: options.store } : {}),
      ingest: { now: options.now, groupCommit: options.groupCommit, commitTimeoutMs: options.commitTimeoutMs },
      // Health is not under test here; it stays up while a test takes its store's database away.
      isDatabaseUp: async () => true,
    },
  });
  const { store, bus } = served.surfaces;

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
    url: served.url,
    db,
    store,
    bus,
    server: served.server,
    rows,
    rawRows: async () => (await db.pool.anyFirst(sql.unsafe`SELECT row_to_json(events)::text FROM events`)).map(String),
    async close() {
      await served.close();
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
