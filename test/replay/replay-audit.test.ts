import { describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import { v7 as uuidv7 } from 'uuid';
import { validateReplayHistory, validateReplayResult } from '../../generated/validators.js';
import { createRateLimiter } from '../../src/auth/rate-limiter.ts';
import { AppError } from '../../src/errors/app-error.ts';
import { refuseInserts, type TestDatabase } from '../support/database.ts';
import { forbiddenResolver } from '../outbound/target-policy/test-helpers.ts';
import {
  countingLimiter,
  expectAppError,
  useReplaySuite,
  storeDelivery,
  type ReplayHarness,
} from './replay-test-kit.ts';
import { closedPort, type Consumer } from '../support/local-server.ts';
import { providersFrom, webhookProvider } from '../support/providers.ts';

/* Every attempt leaves a replay_attempts row and a log line, whatever became of it. */

const providers = providersFrom({ github: { preset: 'github', secret: 'audit-secret-value' } });

let db: TestDatabase;
let kit: ReplayHarness;
let consumer: Consumer;
useReplaySuite(providers, (suite) => ({ db, kit, consumer } = suite));

async function newEventId(): Promise<string> {
  const body = Buffer.from(JSON.stringify({ action: 'opened', at: Math.random() }));
  return (
    await storeDelivery(kit.store, webhookProvider(providers, 'github'), {
      rawHeaders: ['Content-Type', 'application/json', 'X-GitHub-Event', 'issues'],
      body,
    })
  ).id;
}

type LogLine = { msg?: string; replay?: Record<string, unknown> };
const replayLines = (eventId: string): LogLine[] =>
  (kit.logs.lines as LogLine[]).filter((line) => line.replay !== undefined && line.replay['eventId'] === eventId);

describe('audit trail', () => {
  it('records delivered, non-2xx, refused, target-less, failed and rate-limited attempts, newest first', async () => {
    const eventId = await newEventId();
    const limiter = countingLimiter(5);
    const service = kit.service({ checkRateLimit: limiter.check });
    const caller = 'audit-agent';
    const started = Date.now();

    await service.replay({ eventId, targetUrl: consumer.url('/ok'), caller });
    consumer.handle((_req, res) => {
      res.statusCode = 500;
      res.end();
    });
    await service.replay({ eventId, targetUrl: consumer.url('/broken'), caller });
    consumer.handle((_req, res) => res.end('ok'));
    await expectAppError(service.replay({ eventId, targetUrl: 'http://10.0.0.1:8080/x', caller }), 'invalid_argument');
    await expectAppError(service.replay({ eventId, targetUrl: undefined, caller }), 'invalid_argument');
    const port = await closedPort();
    await expectAppError(service.replay({ eventId, targetUrl: `http://127.0.0.1:${port}/`, caller }), 'replay_failed');
    await expectAppError(service.replay({ eventId, targetUrl: consumer.url('/ok'), caller }), 'rate_limited');

    const rows = await kit.attempts.listForEvent(eventId);
    expect(validateReplayHistory({ attempts: rows })).toBe(true);
    expect(
      rows.map(({ caller: c, target_url, resolved_ip, delivered, response_status, error_code, error_reason }) => ({
        c,
        target_url,
        resolved_ip,
        delivered,
        response_status,
        error_code,
        error_reason,
      })),
    ).toEqual([
      {
        c: caller,
        target_url: null,
        resolved_ip: null,
        delivered: false,
        response_status: null,
        error_code: 'rate_limited',
        error_reason: 'rate_limited',
      },
      {
        c: caller,
        target_url: `http://127.0.0.1:${port}/`,
        resolved_ip: '127.0.0.1',
        delivered: false,
        response_status: null,
        error_code: 'replay_failed',
        error_reason: 'could_not_connect',
      },
      {
        c: caller,
        target_url: null,
        resolved_ip: null,
        delivered: false,
        response_status: null,
        error_code: 'invalid_argument',
        error_reason: 'bad_target',
      },
      {
        c: caller,
        target_url: 'http://10.0.0.1:8080/x',
        resolved_ip: '10.0.0.1',
        delivered: false,
        response_status: null,
        error_code: 'invalid_argument',
        error_reason: 'target_not_allowed',
      },
      {
        c: caller,
        target_url: consumer.url('/broken'),
        resolved_ip: '127.0.0.1',
        delivered: true,
        response_status: 500,
        error_code: null,
        error_reason: undefined,
      },
      {
        c: caller,
        target_url: consumer.url('/ok'),
        resolved_ip: '127.0.0.1',
        delivered: true,
        response_status: 200,
        error_code: null,
        error_reason: undefined,
      },
    ]);
    for (const row of rows) {
      expect(row.event_id).toBe(eventId);
      expect(Date.parse(row.started_at)).toBeGreaterThanOrEqual(started - 1);
      expect(Date.parse(row.started_at)).toBeLessThanOrEqual(Date.now());
    }
    expect(rows.filter((r) => r.delivered).every((r) => typeof r.response_ms === 'number' && r.response_ms >= 0)).toBe(
      true,
    );

    const lines = replayLines(eventId);
    expect(lines.map((l) => l.msg)).toEqual([
      'replay delivered',
      'replay delivered',
      'replay refused',
      'replay refused',
      'replay failed',
      'replay refused',
    ]);
    expect(lines.map((l) => l.replay?.['errorCode'])).toEqual([
      null,
      null,
      'invalid_argument',
      'invalid_argument',
      'replay_failed',
      'rate_limited',
    ]);
    expect(lines.every((l) => l.replay?.['caller'] === caller && l.replay['recorded'] === 'yes')).toBe(true);
    expect(lines[0]?.replay).toMatchObject({
      provider: 'github',
      credentials: 'signature',
      status: 200,
      resolvedIp: '127.0.0.1',
    });
    expect(kit.logs.text()).not.toContain('audit-secret-value');
    expect(kit.logs.text()).not.toMatch(/sha256=[0-9a-f]{64}/);
  });

  it('names why an attempt did not deliver: failed check, unresolvable name, no answer, the target itself', async () => {
    const passedId = await newEventId();
    const failed = (
      await storeDelivery(kit.store, webhookProvider(providers, 'github'), {
        rawHeaders: ['Content-Type', 'application/json', 'X-GitHub-Event', 'issues'],
        body: Buffer.from('{"action":"forged"}'),
        passed: false,
      })
    ).id;
    const caller = 'reasons';
    await expectAppError(
      kit.service().replay({ eventId: failed, targetUrl: consumer.url(), caller }),
      'invalid_argument',
    );
    const unresolvable = kit.service({
      resolver: async () => {
        throw Object.assign(new Error('queryA ENOTFOUND'), { code: 'ENOTFOUND' });
      },
    });
    await expectAppError(
      unresolvable.replay({ eventId: passedId, targetUrl: 'http://consumer.invalid/', caller }),
      'replay_failed',
    );
    // Accepts the request, then closes the connection without an answer.
    consumer.handle((_req, res) => res.socket?.destroy());
    await expectAppError(
      kit.service().replay({ eventId: passedId, targetUrl: consumer.url(), caller }),
      'replay_failed',
    );
    // Answers nothing until the replay gives up.
    consumer.handle(() => undefined);
    const impatient = kit.service({ replay: { defaultTarget: undefined, timeoutMs: 300 } });
    await expectAppError(impatient.replay({ eventId: passedId, targetUrl: consumer.url(), caller }), 'replay_failed');
    consumer.handle((_req, res) => res.end('ok'));

    const reasons = async (id: string) =>
      (await kit.attempts.listForEvent(id)).filter((r) => r.caller === caller).map((r) => r.error_reason);
    expect(await reasons(failed)).toEqual(['failed_check']);
    expect(await reasons(passedId)).toEqual(['no_answer', 'no_answer', 'could_not_resolve']);
    expect(validateReplayHistory({ attempts: await kit.attempts.listForEvent(passedId) })).toBe(true);
  });

  it('stores the target with its query string replaced by ?…, while the result keeps the URL as the caller gave it', async () => {
    const eventId = await newEventId();
    const service = kit.service();
    const target = `${consumer.url('/x')}?tok=query-secret-1`;
    const result = await service.replay({ eventId, targetUrl: target, caller: 'agent' });
    // The caller's own input comes back to the caller as given, and the consumer gets the query.
    expect(result.target_url).toBe(target);
    expect(consumer.requests.at(-1)?.url).toBe('/x?tok=query-secret-1');
    // A refused attempt is recorded the same way.
    await expectAppError(
      service.replay({ eventId, targetUrl: 'http://10.0.0.1:8080/y?tok=query-secret-2', caller: 'agent' }),
      'invalid_argument',
    );

    const rows = await kit.attempts.listForEvent(eventId);
    expect(rows.map((r) => r.target_url)).toEqual(['http://10.0.0.1:8080/y?…', `${consumer.url('/x')}?…`]);
    expect(validateReplayHistory({ attempts: rows })).toBe(true);
    const stored = await db.pool.anyFirst(
      sql.type(z.object({ target_url: z.string().nullable() }))`
        SELECT target_url FROM replay_attempts WHERE event_id = ${eventId}`,
    );
    expect(stored.join(' ')).not.toContain('query-secret');
    expect(kit.logs.text()).not.toContain('query-secret');
  });

  it('a not_found attempt cannot reference an event row, so it is logged only', async () => {
    const eventId = uuidv7();
    await expectAppError(
      kit.service().replay({ eventId, targetUrl: consumer.url(), caller: 'ghost-hunter' }),
      'not_found',
    );
    expect(await kit.attempts.listForEvent(eventId)).toEqual([]);
    expect(replayLines(eventId)).toMatchObject([
      { msg: 'replay refused', replay: { errorCode: 'not_found', caller: 'ghost-hunter', recorded: 'no-event-row' } },
    ]);
  });

  it('a rate-limited attempt on an unknown id is logged only (its row would reference nothing)', async () => {
    const eventId = uuidv7();
    const service = kit.service({ checkRateLimit: countingLimiter(0).check });
    await expectAppError(service.replay({ eventId, targetUrl: consumer.url(), caller: 'flooder' }), 'rate_limited');
    expect(await kit.attempts.listForEvent(eventId)).toEqual([]);
    expect(replayLines(eventId)).toMatchObject([{ replay: { errorCode: 'rate_limited', recorded: 'no-event-row' } }]);
  });

  it('a failure to write the audit row is logged and does not turn a delivered replay into an error', async () => {
    const eventId = await newEventId();
    const service = kit.service({
      attempts: {
        record: async () => {
          throw new Error('database went away');
        },
      },
    });
    const before = consumer.requests.length;
    const result = await service.replay({ eventId, targetUrl: consumer.url(), caller: 'agent' });
    expect(result.delivered).toBe(true);
    // The result says its history row is missing (26.2), and still matches its contract.
    expect(result.history_recorded).toBe(false);
    expect(validateReplayResult(result)).toBe(true);
    expect(consumer.requests.length).toBe(before + 1);
    const errorLine = (kit.logs.lines as (LogLine & { eventId?: string })[]).find(
      (l) => l.msg === 'replay attempt could not be recorded in replay_attempts' && l.eventId === eventId,
    );
    expect(errorLine).toBeDefined();
    expect(replayLines(eventId)).toMatchObject([{ replay: { recorded: 'failed' } }]);
  });
});

describe('an audit row the database refuses (26.2)', () => {
  it('says so in the replay result and logs an error, while a recorded replay says nothing', async () => {
    // A real PostgreSQL error on the insert, for one caller only.
    const allow = await refuseInserts(db.pool, {
      trigger: 'refuse_history_caller',
      table: 'replay_attempts',
      column: 'caller',
      value: 'no-history',
    });
    try {
      const eventId = await newEventId();
      const lost = await kit.service().replay({ eventId, targetUrl: consumer.url(), caller: 'no-history' });
      expect(lost).toMatchObject({ delivered: true, history_recorded: false });
      expect(validateReplayResult(lost)).toBe(true);
      const kept = await kit.service().replay({ eventId, targetUrl: consumer.url(), caller: 'agent' });
      expect(kept).not.toHaveProperty('history_recorded');
      expect((await kit.attempts.listForEvent(eventId)).map((a) => a.caller)).toEqual(['agent']);
      expect(
        (kit.logs.lines as (LogLine & { eventId?: string; level?: number })[]).filter(
          (l) => l.msg === 'replay attempt could not be recorded in replay_attempts' && l.eventId === eventId,
        ),
      ).toMatchObject([{ level: 50 }]);
    } finally {
      await allow();
    }
  });
});

describe('rate limiting', () => {
  it('Exhausted bucket returns rate_limited: the real token bucket, checked first, with retry_after, and no DNS or outbound request', async () => {
    const eventId = await newEventId();
    let clockMs = 0;
    const limiter = createRateLimiter({
      limits: {
        read: { capacity: 100, refillPerSecond: 10 },
        write: { capacity: 100, refillPerSecond: 10 },
        replay: { capacity: 2, refillPerSecond: 0.5 },
      },
      now: () => clockMs,
    });
    const before = consumer.requests.length;
    const service = kit.service({ checkRateLimit: limiter.checkReplay });
    await service.replay({ eventId, targetUrl: consumer.url(), caller: 'busy' });
    await service.replay({ eventId, targetUrl: consumer.url(), caller: 'busy' });

    const connectionsBefore = consumer.connections;
    const resolver = forbiddenResolver();
    const limited = kit.service({ checkRateLimit: limiter.checkReplay, resolver: resolver.resolver });
    const error = await expectAppError(
      limited.replay({ eventId, targetUrl: 'http://consumer.example/', caller: 'busy' }),
      'rate_limited',
    );
    expect(error.retryAfterSeconds).toBe(2);
    expect(resolver.calls).toEqual([]);
    expect(consumer.connections).toBe(connectionsBefore);
    expect(consumer.requests.length).toBe(before + 2);
    // Checked before the event is looked up: an unknown id is rate_limited too, not not_found.
    await expectAppError(limited.replay({ eventId: uuidv7(), targetUrl: undefined, caller: 'busy' }), 'rate_limited');

    // Buckets are per caller, and refill with time.
    await limited.replay({ eventId, targetUrl: consumer.url(), caller: 'someone-else' });
    clockMs += 2_000;
    await service.replay({ eventId, targetUrl: consumer.url(), caller: 'busy' });

    const rows = await kit.attempts.listForEvent(eventId);
    expect(rows.map((r) => [r.caller, r.error_code])).toEqual([
      ['busy', null],
      ['someone-else', null],
      ['busy', 'rate_limited'],
      ['busy', null],
      ['busy', null],
    ]);
  });

  it('a limiter that throws something other than AppError is recorded as internal and rethrown as is', async () => {
    const eventId = await newEventId();
    const boom = new Error('limiter exploded');
    const service = kit.service({
      checkRateLimit: () => {
        throw boom;
      },
    });
    await expect(service.replay({ eventId, targetUrl: consumer.url(), caller: 'agent' })).rejects.toBe(boom);
    expect(boom).not.toBeInstanceOf(AppError);
    const [row] = await kit.attempts.listForEvent(eventId);
    expect(row).toMatchObject({ error_code: 'internal', delivered: false });
  });
});
