/**
 * The dispatcher's own connections (src/store/outbox/claim-connection.ts) against a real PostgreSQL whose
 * backends are terminated under them (pg_terminate_backend, as an administrator or a failover
 * does): a statement cut off says the database is unavailable, and the next one runs on a new
 * connection, its prepared statements prepared again, with no restart.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.ts';
import { forwardRuleMatcher } from '../../src/config/forward-rules.ts';
import { isDatabaseUnavailable } from '../../src/errors/database-unavailable.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { newEvent } from '../support/events.ts';
import { claimConnectionsFor } from '../../src/store/outbox/claim-connection.ts';
import { deliveryStoreFixture } from './delivery-store-fixture.ts';

const { forward: rules } = parseConfig('forward:\n  all: { to: "http://127.0.0.1:1/a" }\n', {});

const fixture = deliveryStoreFixture();

/** Ends every backend of the claim connections (by their application name), as a failover would. */
async function terminateClaimBackends(): Promise<number> {
  const ended = await fixture.db.pool.anyFirst(sql.type(z.object({ ended: z.boolean() }))`
    SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = 'switchboard-forward'
  `);
  return ended.filter(Boolean).length;
}

async function queue(count: number): Promise<void> {
  const matcher = forwardRuleMatcher(rules);
  if (matcher === undefined) throw new Error('no matcher');
  await createEventStore(fixture.db.pool, { forwardRulesFor: matcher }).insertMany(
    Array.from({ length: count }, () => newEvent({ eventType: 'push' })),
  );
}

const claimRequest = (limit: number) => ({
  rule: 'all',
  limit,
  claimTimeoutMs: 30_000,
  ordered: false,
  claim: crypto.randomUUID(),
});

describe('the forward claim connections', () => {
  it('claim, settle and renew again on a new connection after their backends were terminated', async () => {
    await queue(4);
    const [first] = await fixture.deliveries.settleAndClaim([], claimRequest(1));
    if (first === undefined) throw new Error('nothing claimed');
    expect(await terminateClaimBackends()).toBeGreaterThan(0);
    // The pool learns of the idle connection's end from its socket; the next statement opens a new one.
    await delay(100);
    const request = claimRequest(2);
    const next = await fixture.deliveries.settleAndClaim(
      [
        {
          delivery: first,
          attempt: { startedAt: new Date(), status: 200, ms: 1, error: null, excerpt: null, contentType: null },
          settlement: { state: 'delivered' },
        },
      ],
      request,
    );
    expect(next).toHaveLength(2);
    expect((await fixture.deliveries.get(first.id))?.state).toBe('delivered');
    expect((await fixture.deliveries.get(first.id))?.attempts).toHaveLength(1);
    expect(
      await fixture.deliveries.renew(
        next.map((delivery) => delivery.id),
        request.claim,
        60_000,
      ),
    ).toEqual(expect.arrayContaining(next.map((delivery) => delivery.id)));
  });

  it('fails a statement cut off mid-run as "database unavailable", and runs the next one', async () => {
    const running = fixture.claims.run('claim_connection_test_sleep', 'SELECT pg_sleep(10)', []).then(
      () => undefined,
      (error: unknown) => error,
    );
    // Terminated once the statement is running on its backend.
    for (let tries = 0; tries < 50 && (await terminateClaimBackends()) === 0; tries += 1) await delay(20);
    const error = await running;
    expect(error).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(error)).toBe(true);
    await queue(1);
    expect(await fixture.deliveries.settleAndClaim([], claimRequest(5))).toHaveLength(1);
  });

  it('runs with an idle-in-transaction timeout, custom plans and no parallel workers', async () => {
    const setting = async (name: string): Promise<unknown> => {
      const [row] = await fixture.claims.run(`claim_connection_test_show_${name}`, `SHOW ${name}`, []);
      return typeof row === 'object' && row !== null && name in row
        ? (row as Record<string, unknown>)[name]
        : undefined;
    };
    expect(await setting('idle_in_transaction_session_timeout')).toBe('1min');
    expect(await setting('plan_cache_mode')).toBe('force_custom_plan');
    expect(await setting('max_parallel_workers_per_gather')).toBe('0');
    // A transaction left open past the timeout is ended by PostgreSQL, not held with its locks.
    const [row] = await fixture.claims
      .transaction(async (run) => {
        await run('claim_connection_test_short_idle', 'SET LOCAL idle_in_transaction_session_timeout = 100', []);
        await delay(400);
        return run('claim_connection_test_after_idle', 'SELECT 1 AS one', []);
      })
      .then(
        () => [undefined],
        (error: unknown) => [error],
      );
    expect(row).toBeInstanceOf(Error);
    // The ended connection is not reused: the next statement runs on a fresh one.
    expect(await setting('idle_in_transaction_session_timeout')).toBe('1min');
    expect(claimConnectionsFor(1)).toBe(2);
    expect(claimConnectionsFor(3)).toBe(4);
    expect(claimConnectionsFor(40)).toBe(8);
  });

  it('claims an ordered rule head in its advisory-locked transaction, also after a termination', async () => {
    await queue(2);
    const ordered = { ...claimRequest(5), ordered: true };
    const [head] = await fixture.deliveries.claim(ordered);
    expect(head).toBeDefined();
    // In flight: nothing more for an ordered rule.
    expect(await fixture.deliveries.claim({ ...ordered, claim: crypto.randomUUID() })).toEqual([]);
    expect(await terminateClaimBackends()).toBeGreaterThan(0);
    await delay(100);
    expect(await fixture.deliveries.claim({ ...ordered, claim: crypto.randomUUID() })).toEqual([]);
  });
});
