/**
 * Shared pieces of the replay service tests: consumers that record exactly what arrives, stored
 * events built the way ingest builds them (sanitized headers, redacted signatures), and a service
 * wired to a real database.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import type { ProviderConfig } from '../../src/config/resolve-config.ts';
import type { ErrorCode } from '../../generated/constants.ts';
import { AppError } from '../../src/errors/app-error.ts';
import { sanitizeHeaders } from '../../src/sanitize/sanitize-headers.ts';
import { createLogger, type Logger } from '../../src/log/logger.ts';
import { createOutbound, type Outbound, type OutboundOptions } from '../../src/outbound/deliver-event.ts';
import { createReplayService, type ReplayServiceDeps } from '../../src/replay/replay-service.ts';
import type { ReplayService } from '../../src/replay/replay-types.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import {
  createReplayAttemptRepository,
  type ReplayAttemptRepository,
} from '../../src/store/records/replay-attempt-repository.ts';
import type { StoredEvent } from '../../src/store/events/event-store.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { startConsumer, type Consumer } from '../support/local-server.ts';

export interface Delivery {
  /** Name, value pairs as a sender put them on the wire (signature headers included). */
  rawHeaders: string[];
  body: Buffer;
  /** Where the delivery came from; default a documentation address (203.0.113.7). */
  sourceIp?: string;
  /** Whether it passed its signature or token check on arrival; default true. */
  passed?: boolean;
}

/**
 * Stores a delivery the way ingest does: headers sanitized with the preset's sensitive names (and
 * the token header) redacted, identity from the preset, exact bytes.
 */
export async function storeDelivery(
  store: PgEventStore,
  provider: ProviderConfig,
  delivery: Delivery,
): Promise<StoredEvent> {
  const contentType = headerOf(delivery.rawHeaders, 'content-type') ?? null;
  let sensitive: string[] = [];
  let eventType = 'message';
  let externalId: string | null = null;
  let trustMode: StoredEvent['trustMode'] = 'queue';
  if (provider.family === 'webhook') {
    const { preset } = provider;
    sensitive = [...preset.sensitiveHeaders];
    const headerBag = Object.fromEntries(pairs(delivery.rawHeaders).map(([n, v]) => [n.toLowerCase(), v]));
    ({ eventType, externalId } = preset.identify(delivery.body, headerBag));
    trustMode = provider.trustMode;
  }
  const checked = trustMode === 'signed' || trustMode === 'token';
  const passed = delivery.passed ?? true;
  const inserted = await store.insert({
    provider: provider.name,
    eventType,
    trustMode,
    verified: trustMode === 'signed' && passed,
    ...(checked ? { passedCheck: passed } : {}),
    verifyDetail: !checked
      ? 'not verified (test delivery)'
      : passed
        ? 'check passed (test delivery)'
        : 'check failed (test delivery)',
    externalId,
    contentType,
    sourceIp: delivery.sourceIp ?? '203.0.113.7',
    headers: sanitizeHeaders(delivery.rawHeaders, {
      sensitiveHeaders: sensitive,
      dropHopByHop: provider.family === 'webhook',
    }),
    payload: delivery.body,
  });
  const stored = await store.get(inserted.event.id);
  if (stored === null) throw new Error('stored event vanished');
  return stored;
}

function pairs(raw: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i] ?? '', raw[i + 1] ?? '']);
  return out;
}

function headerOf(raw: readonly string[], name: string): string | undefined {
  return pairs(raw).find(([n]) => n.toLowerCase() === name)?.[1];
}

interface LogCapture {
  logger: Logger;
  lines: Record<string, unknown>[];
  /** Everything logged, as one string, for "no secret anywhere" checks. */
  text(): string;
}

function captureLogs(): LogCapture {
  const raw: string[] = [];
  const logger = createLogger({ level: 'debug', destination: { write: (line: string) => void raw.push(line) } });
  return {
    logger,
    get lines() {
      return raw.map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    text: () => raw.join(''),
  };
}

/** A token bucket without refill: `capacity` replays per caller, then rate_limited. */
export function countingLimiter(capacity: number): { check: (caller: string) => void; calls: string[] } {
  const used = new Map<string, number>();
  const calls: string[] = [];
  return {
    calls,
    check: (caller) => {
      calls.push(caller);
      const n = (used.get(caller) ?? 0) + 1;
      used.set(caller, n);
      if (n > capacity)
        throw new AppError('rate_limited', 'replay budget exhausted; retry later', { retryAfterSeconds: 2 });
    },
  };
}

/** What a test may change: the service's own dependencies, and the sending path's options it is built with. */
type ReplayOverrides = Partial<Omit<ReplayServiceDeps, 'outbound'>> &
  Partial<Omit<OutboundOptions, 'providers' | 'logger'>>;

export interface ReplayHarness {
  store: PgEventStore;
  attempts: ReplayAttemptRepository;
  logs: LogCapture;
  /**
   * A service built as the server builds it, on its own sending path (createOutbound), allowed
   * `allow` (default none) besides loopback.
   */
  service(overrides?: ReplayOverrides): ReplayService;
  /** Closes the sending paths the services were built on (their kept connections). */
  close(): Promise<void>;
}

export interface ReplaySuite {
  db: TestDatabase;
  kit: ReplayHarness;
  /** A consumer on 127.0.0.1 that records what arrives. */
  consumer: Consumer;
}

/** Registers a suite's hooks: a fresh database, a replay harness on it and a consumer, closed after all. */
export function useReplaySuite(providers: readonly ProviderConfig[], use: (suite: ReplaySuite) => void): void {
  let suite: ReplaySuite | undefined;
  beforeAll(async () => {
    const db = await freshDatabase();
    suite = { db, kit: replayHarness(db, providers), consumer: await startConsumer() };
    use(suite);
  });
  afterAll(async () => {
    await suite?.kit.close();
    await suite?.consumer.close();
    await suite?.db.close();
  });
}

export function replayHarness(db: TestDatabase, providers: readonly ProviderConfig[]): ReplayHarness {
  const store = createEventStore(db.pool);
  const attempts = createReplayAttemptRepository(db.pool);
  const logs = captureLogs();
  const outbounds: Outbound[] = [];
  return {
    store,
    attempts,
    logs,
    service: (overrides = {}) => {
      const { allow = [], selfAddresses = () => [], policy, resolver, connect, onConnect, now } = overrides;
      const { responseBodyLimitBytes } = overrides;
      const sendsFor = overrides.providers ?? providers;
      const outbound = createOutbound({
        providers: sendsFor,
        allow,
        selfAddresses,
        logger: logs.logger,
        ...(policy === undefined ? {} : { policy }),
        ...(resolver === undefined ? {} : { resolver }),
        ...(connect === undefined ? {} : { connect }),
        ...(onConnect === undefined ? {} : { onConnect }),
        ...(now === undefined ? {} : { now }),
        ...(responseBodyLimitBytes === undefined ? {} : { responseBodyLimitBytes }),
      });
      outbounds.push(outbound);
      return createReplayService({
        store: overrides.store ?? store,
        attempts: overrides.attempts ?? attempts,
        providers: sendsFor,
        replay: overrides.replay ?? { defaultTarget: undefined, timeoutMs: 3_000 },
        logger: overrides.logger ?? logs.logger,
        outbound,
        ...(overrides.checkRateLimit === undefined ? {} : { checkRateLimit: overrides.checkRateLimit }),
        ...(now === undefined ? {} : { now }),
      });
    },
    close: async () => {
      await Promise.all(outbounds.splice(0).map((outbound) => outbound.close()));
    },
  };
}

/** Awaits a rejection and checks it is the contract's error with this code. */
export async function expectAppError(action: Promise<unknown>, code: ErrorCode, message?: RegExp): Promise<AppError> {
  let caught: unknown;
  try {
    await action;
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected AppError ${code}`).toBeInstanceOf(AppError);
  const appError = caught as AppError;
  expect(appError.code, appError.message).toBe(code);
  if (message) expect(appError.message).toMatch(message);
  return appError;
}
