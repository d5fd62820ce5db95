/**
 * The setup the reliability files share: a fresh database, optionally a controlled TCP proxy in
 * front of PostgreSQL or Redis (to take it away), a loopback consumer for forward rules, a Redis
 * client of the test's own, and the switchboard children and MCP clients started on them.
 *
 * reliabilitySuite() registers the beforeAll and afterAll hooks of the file or describe it is
 * called in and answers an object whose fields are there once beforeAll has run; reading one
 * earlier (at collection time) throws, rather than handing a test an undefined. After the suite,
 * everything it started is ended in reverse order: MCP clients, children, consumer, Redis keys,
 * proxy, database.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { freshDatabase, type FreshDatabaseOptions, type TestDatabase } from '../../support/database.ts';
import { startConsumer, type Consumer } from '../../support/local-server.ts';
import {
  spawnSwitchboard,
  type SpawnedSwitchboard,
  type SpawnSwitchboardOptions,
} from '../../support/spawn-switchboard.ts';
import { proxyInFrontOf, type ControlledProxy } from '../../support/tcp-proxy.ts';
import { connectMcp } from './clients.ts';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A child's options; the database (through the proxy, when it is in front of PostgreSQL) is the suite's unless given. */
type ChildOptions = Omit<SpawnSwitchboardOptions, 'databaseUrl'> & { databaseUrl?: string };

export interface SuiteOptions {
  /** freshDatabase's options (migrate: false, for instances that race to migrate it). */
  database?: FreshDatabaseOptions;
  /** A proxy in front of PostgreSQL or Redis; the suite's children reach that server only through it. */
  proxy?: 'database' | 'redis';
  /** A loopback consumer (local-server.ts) for forward rules and replays to send to. */
  consumer?: boolean;
  /** A Redis client of the test's own (not through the proxy); these keys are deleted afterwards. */
  redis?: { deleteAfter: readonly string[] };
  /** The child started in beforeAll, as `suite.child`. */
  child?: ChildOptions;
  /** An official SDK MCP client on that child, as `suite.mcp`. */
  mcp?: boolean;
  /**
   * How children still running afterwards are ended: 'stop' (SIGTERM, then a drain) or 'kill'
   * (SIGKILL, for files whose children may be mid-load or already killed). Default 'stop'.
   */
  end?: 'stop' | 'kill';
}

export interface ReliabilitySuite {
  readonly db: TestDatabase;
  readonly proxy: ControlledProxy;
  readonly consumer: Consumer;
  readonly redis: Redis;
  readonly child: SpawnedSwitchboard;
  readonly mcp: Client;
  /** Starts a child on the suite's database (and proxy); it is ended and cleaned up after the suite. */
  spawn(options: ChildOptions): Promise<SpawnedSwitchboard>;
  /** An official SDK MCP client on a child, with the child's own token unless given; closed after the suite. */
  connectMcp(child: SpawnedSwitchboard, token?: string, name?: string): Promise<Client>;
}

type Parts = Pick<ReliabilitySuite, 'db' | 'proxy' | 'consumer' | 'redis' | 'child' | 'mcp'>;

/** Each part, as an error names it when a test reads it before beforeAll started it (or when it was not asked for). */
const PART_NAMES: Readonly<Record<keyof Parts, string>> = {
  db: 'database',
  proxy: 'proxy',
  consumer: 'consumer',
  redis: 'Redis client',
  child: 'child',
  mcp: 'MCP client',
};

/** Getters over what beforeAll fills in, each throwing while its part is not there. */
function partsOf(started: Partial<Parts>): Parts {
  const parts = {} as Parts;
  for (const key of Object.keys(PART_NAMES) as (keyof Parts)[]) {
    Object.defineProperty(parts, key, {
      enumerable: true,
      get: () => {
        const part = started[key];
        if (part === undefined) {
          throw new Error(`the suite's ${PART_NAMES[key]} is not there: read it in a test or hook, and ask for it`);
        }
        return part;
      },
    });
  }
  return parts;
}

export function reliabilitySuite(options: SuiteOptions = {}): ReliabilitySuite {
  const started: { -readonly [K in keyof Parts]?: Parts[K] } = {};
  const children: SpawnedSwitchboard[] = [];
  const clients: Client[] = [];

  const suite: ReliabilitySuite = Object.assign(partsOf(started), {
    async spawn(childOptions: ChildOptions) {
      const { db } = suite;
      const via = (url: string): string => started.proxy?.via(url) ?? url;
      const child = await spawnSwitchboard({
        ...(options.proxy === 'redis' ? { redisUrl: via(REDIS_URL) } : {}),
        ...childOptions,
        databaseUrl: childOptions.databaseUrl ?? (options.proxy === 'database' ? via(db.url) : db.url),
      });
      children.push(child);
      return child;
    },
    async connectMcp(child: SpawnedSwitchboard, token = child.token ?? '', name?: string) {
      const client = await connectMcp(child.mcpUrl, token, name);
      clients.push(client);
      return client;
    },
  });

  beforeAll(async () => {
    started.db = await freshDatabase(options.database);
    if (options.proxy !== undefined) {
      started.proxy = await proxyInFrontOf(options.proxy === 'database' ? started.db.url : REDIS_URL);
    }
    if (options.consumer === true) started.consumer = await startConsumer();
    if (options.redis !== undefined) {
      started.redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
      await started.redis.connect();
    }
    if (options.child !== undefined) started.child = await suite.spawn(options.child);
    if (options.mcp === true) started.mcp = await suite.connectMcp(suite.child);
  });

  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    await Promise.all(
      children.map(async (child) => {
        if (options.end === 'kill') child.kill('SIGKILL');
        await (options.end === 'kill' ? child.exited : child.stop());
        child.cleanup();
      }),
    );
    await started.consumer?.close();
    if (started.redis !== undefined) {
      for (const key of options.redis?.deleteAfter ?? []) await started.redis.del(key).catch(() => undefined);
      started.redis.disconnect();
    }
    await started.proxy?.close();
    await started.db?.close();
  });

  return suite;
}
