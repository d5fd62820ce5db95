/**
 * What a fuzz surface is aimed at: a running switchboard (in this process for the fast tests, a
 * child process for bench/fuzz.ts), its database, a local consumer to replay to, a closed port,
 * and a way to ask whether anything went wrong inside (unhandled rejection, crash).
 *
 * No vitest import: bench/fuzz.ts uses this too.
 */
import { z } from 'zod';
import { sql, type DatabasePool } from 'slonik';
import { Agent, request } from 'undici';
import type { Provider, SwitchboardConfig } from '../../../generated/types.ts';
import { createLogger } from '../../../src/log/logger.ts';
import type { ServerTimeouts } from '../../../src/http/http-server.ts';
import type { RunningSwitchboard } from '../../../src/server/start-switchboard.ts';
import { startComposedServer } from '../../support/composed-server.ts';
import { answerWith, closedPort, LOOPBACK, startConsumer } from '../../support/local-server.ts';
import { randomToken, type SpawnedSwitchboard } from '../../support/spawn-switchboard.ts';

export const FUZZ_GITHUB_SECRET = 'fuzz-github-secret-4b1d';
export const FUZZ_HOOK_TOKEN = 'fuzz-hook-token-9c2e77';

/** What each fuzz provider takes; larger bodies are refused 413. */
export const FUZZ_MAX_BODY_BYTES = 64 * 1024;

/** The providers of the fuzz config, one of each trust mode. */
export const FUZZ_PROVIDERS = ['github', 'hook', 'open'] as const;
export type FuzzProvider = (typeof FUZZ_PROVIDERS)[number];

/** Providers of each trust mode; rejected deliveries are not recorded, so a refusal changes no row. */
export function fuzzConfig(overrides: Partial<SwitchboardConfig> = {}): SwitchboardConfig {
  const providers: Record<FuzzProvider, Provider> = {
    github: {
      preset: 'github',
      secret: FUZZ_GITHUB_SECRET,
      record_rejected: false,
      max_body_bytes: FUZZ_MAX_BODY_BYTES,
    },
    hook: { trust_mode: 'token', token: FUZZ_HOOK_TOKEN, record_rejected: false, max_body_bytes: FUZZ_MAX_BODY_BYTES },
    open: { trust_mode: 'open', max_body_bytes: FUZZ_MAX_BODY_BYTES },
  };
  return {
    providers,
    // Fuzzing is not a rate-limit test: buckets large enough never to refuse.
    rate_limits: {
      read: { capacity: 1_000_000, refill_per_second: 1_000_000 },
      replay: { capacity: 1_000_000, refill_per_second: 1_000_000 },
    },
    mcp: { max_sessions: 1_000 },
    ...overrides,
  };
}

export interface FuzzTarget {
  url: string;
  port: number;
  token: string;
  pool: DatabasePool;
  /** A local HTTP server that answers 204: the only replay target that gets through. */
  consumerPort: number;
  /** A loopback port nothing listens on. */
  closedPort: number;
  /** One keep-alive agent for the surfaces' requests. */
  agent: Agent;
  /** Problems seen inside the server so far: unhandled rejections, uncaught exceptions, a crash. */
  faults(): string[];
  close(): Promise<void>;
}

/** switchboard in this process (the real composition root), for the fast tests. */
export async function startInProcessTarget(options: {
  databaseUrl: string;
  pool: DatabasePool;
  config?: SwitchboardConfig;
  serverTimeouts?: Partial<ServerTimeouts>;
}): Promise<FuzzTarget & { running: RunningSwitchboard }> {
  const faults: string[] = [];
  const onRejection = (reason: unknown): void => {
    faults.push(`unhandledRejection: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`);
  };
  const onException = (error: Error): void => {
    faults.push(`uncaughtException: ${error.stack ?? error.message}`);
  };
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  const token = randomToken();
  const consumer = await startConsumer(LOOPBACK, answerWith(204));
  const server = await startComposedServer({
    config: options.config ?? fuzzConfig(),
    envToken: token,
    database: { url: options.databaseUrl },
    logger: createLogger({ level: process.env.LOG_LEVEL ?? 'silent' }),
    drainTimeoutMs: 1_000,
    ...(options.serverTimeouts ? { serverTimeouts: options.serverTimeouts } : {}),
  });
  const agent = new Agent({ connections: 16, keepAliveTimeout: 2_000 });
  return {
    url: server.url,
    port: server.port,
    token,
    pool: options.pool,
    consumerPort: consumer.port,
    closedPort: await closedPort(),
    agent,
    faults: () => [...faults],
    running: server.running,
    close: async () => {
      await agent.close();
      await server.close();
      await consumer.close();
      process.off('unhandledRejection', onRejection);
      process.off('uncaughtException', onException);
    },
  };
}

/** A switchboard child process (bench/fuzz.ts): faults are a crash or the runtime's own reports. */
export async function childTarget(child: SpawnedSwitchboard, pool: DatabasePool): Promise<FuzzTarget> {
  const consumer = await startConsumer(LOOPBACK, answerWith(204));
  const agent = new Agent({ connections: 16, keepAliveTimeout: 2_000 });
  return {
    url: child.url,
    port: child.port,
    token: child.token ?? '',
    pool,
    consumerPort: consumer.port,
    closedPort: await closedPort(),
    agent,
    faults: () => {
      const found: string[] = [];
      if (!child.isRunning()) found.push(`the server process exited: ${child.output().slice(-2000)}`);
      const report =
        /unhandledRejection|UnhandledPromiseRejection|uncaughtException|FATAL ERROR|"msg":"unhandled error"/.exec(
          child.output(),
        );
      if (report)
        found.push(
          `the server reported: ${child.output().slice(Math.max(0, report.index - 500), report.index + 1500)}`,
        );
      return found;
    },
    close: async () => {
      await agent.close();
      await consumer.close();
    },
  };
}

/** The tables a read or a refused request must leave exactly as they were. */
export const STORED_TABLES = ['events', 'replay_attempts', 'api_tokens'] as const;

/**
 * Every table's rows as (xmin, ctid) pairs, hashed: any INSERT, UPDATE or DELETE changes it,
 * immediately (unlike pg_stat counters), without reading the payloads.
 */
export async function tableSnapshot(
  pool: DatabasePool,
  tables: readonly string[] = STORED_TABLES,
): Promise<Record<string, string>> {
  // One round trip for all tables: this runs before and after every fuzz case.
  const parts = tables.map(
    (table) => sql.fragment`
      SELECT ${table}::text AS name,
        count(*)::text || ':' || md5(coalesce(string_agg(t.xmin::text || '/' || t.ctid::text, ',' ORDER BY t.ctid), '')) AS digest
      FROM ${sql.identifier([table])} AS t`,
  );
  const rows = await pool.any(
    sql.type(z.object({ name: z.string(), digest: z.string() }))`${sql.join(parts, sql.fragment` UNION ALL `)}`,
  );
  return Object.fromEntries(rows.map((row) => [String(row.name), String(row.digest)]));
}

/** GET /healthz answers 200 within the bound. */
export async function isResponsive(target: Pick<FuzzTarget, 'url' | 'agent'>, timeoutMs = 3_000): Promise<boolean> {
  try {
    const response = await request(`${target.url}/healthz`, {
      dispatcher: target.agent,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    await response.body.text();
    return response.statusCode === 200;
  } catch {
    return false;
  }
}
