/** Real Redis and PostgreSQL for queue source tests. */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { sql } from 'slonik';
import type { Provider } from '../../generated/types.ts';
import { PostgresEventBus } from '../../src/bus/postgres-event-bus.ts';
import { resolveConfig } from '../../src/config/resolve-config.ts';
import { startQueueSources, type QueueSources, type QueueSourcesOptions } from '../../src/queue/queue-sources.ts';
import type { EventStore, StoredEvent } from '../../src/store/events/event-store.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { silentLogger, type TestDatabase } from '../support/database.ts';

export const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';

/**
 * Whether the queue tests can run. Under CI they must: an unreachable Redis is then a failure,
 * never a skip. Locally they are skipped with the reason printed.
 */
export async function redisAvailable(): Promise<boolean> {
  const probe = new Redis(REDIS_URL, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    await probe.ping();
    return true;
  } catch (err: unknown) {
    if (process.env['CI'] === 'true') throw new Error(`Redis at ${REDIS_URL} is required under CI: ${String(err)}`);
    process.stdout.write(`queue tests skipped: Redis at ${REDIS_URL} is not reachable (${String(err)})\n`);
    return false;
  } finally {
    probe.disconnect();
  }
}

export const uniqueKey = (label: string): string => `switchboard-test:${label}:${randomUUID()}`;

export function queueProviders(providers: Record<string, Provider>): ReturnType<typeof resolveConfig>['providers'] {
  return resolveConfig({ providers }).providers;
}

export interface QueueHarness {
  store: PgEventStore;
  bus: PostgresEventBus;
  redis: Redis;
  start(
    providers: Record<string, Provider>,
    options?: Partial<QueueSourcesOptions> & { store?: EventStore },
  ): Promise<QueueSources>;
  rows(provider: string): Promise<StoredEvent[]>;
  count(provider: string): Promise<number>;
  close(): Promise<void>;
}

export async function queueHarness(db: TestDatabase): Promise<QueueHarness> {
  const store = createEventStore(db.pool);
  const bus = new PostgresEventBus({ databaseUrl: db.url, logger: silentLogger });
  await bus.ready();
  const redis = new Redis(REDIS_URL);
  const started: QueueSources[] = [];
  return {
    store,
    bus,
    redis,
    async start(providers, options = {}) {
      const sources = startQueueSources({
        providers: queueProviders(providers),
        redisUrl: REDIS_URL,
        store,
        logger: silentLogger,
        backoff: { minMs: 50, maxMs: 500 },
        ...options,
      });
      started.push(sources);
      return sources;
    },
    async rows(provider) {
      const ids = await db.pool.anyFirst(
        sql.unsafe`SELECT id FROM events WHERE provider = ${provider} ORDER BY received_at, id`,
      );
      const events = await Promise.all(ids.map((id) => store.get(String(id))));
      return events.filter((e): e is StoredEvent => e !== null);
    },
    async count(provider) {
      return Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM events WHERE provider = ${provider}`));
    },
    async close() {
      await Promise.all(started.map((s) => s.stop()));
      await bus.close();
      redis.disconnect();
    },
  };
}

/** Kills the server side of every connection whose CLIENT SETNAME is `name`. */
export async function killConnections(redis: Redis, name: string): Promise<number> {
  const list = await redis.client('LIST');
  const ids = String(list)
    .split('\n')
    .filter((line) => line.includes(` name=${name} `))
    .map((line) => /(?:^|\s)id=(\d+)/.exec(line)?.[1])
    .filter((id): id is string => id !== undefined);
  for (const id of ids) await redis.client('KILL', 'ID', id);
  return ids.length;
}
