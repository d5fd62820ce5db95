import { createHash } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateReplayHistory } from '../../generated/validators.js';
import { AppError } from '../../src/errors/app-error.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { createReplayAttemptRepository } from '../../src/store/records/replay-attempt-repository.ts';
import { createTokenRepository, TOKEN_PREFIX } from '../../src/store/records/token-repository.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(() => db.close());

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error: unknown = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof AppError)) throw new Error(`expected an AppError, got ${String(error)}`);
  return error;
}

describe('token repository', () => {
  it('creates a token shown once and stores only its sha-256', async () => {
    const tokens = createTokenRepository(db.pool);
    const created = await tokens.create('claude-desktop');
    expect(created.name).toBe('claude-desktop');
    expect(created.token.startsWith(TOKEN_PREFIX)).toBe(true);
    expect(created.token.length).toBeGreaterThanOrEqual(TOKEN_PREFIX.length + 43);
    const stored = await db.pool.one(sql.type(z.object({ token_hash: z.instanceof(Buffer) }))`
      SELECT token_hash FROM api_tokens WHERE name = 'claude-desktop'
    `);
    expect(stored.token_hash.equals(createHash('sha256').update(created.token).digest())).toBe(true);
    const everything = await db.pool.anyFirst(
      sql.type(z.object({ row: z.string() }))`SELECT api_tokens::text AS row FROM api_tokens`,
    );
    expect(everything.join('')).not.toContain(created.token);
  });

  it('finds active tokens by plaintext, records use, and ignores anything else', async () => {
    const tokens = createTokenRepository(db.pool);
    const { token } = await tokens.create('ci');
    const found = await tokens.findByToken(token);
    expect(found).toMatchObject({ name: 'ci', revokedAt: null });
    expect(found?.lastUsedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    expect((await tokens.list()).find((t) => t.name === 'ci')?.lastUsedAt).toBe(found?.lastUsedAt);
    // Used again within the minute: no second write, same answer.
    expect((await tokens.findByToken(token))?.lastUsedAt).toBe(found?.lastUsedAt);
    expect(await tokens.findByToken(`${token}x`)).toBeNull();
    expect(await tokens.findByToken(token.slice(0, -1))).toBeNull();
    expect(await tokens.findByToken('')).toBeNull();
    expect(await tokens.findByToken('Bearer ' + token)).toBeNull();
  });

  it('revokes by name; revoked tokens stop working and the name can be reused', async () => {
    const tokens = createTokenRepository(db.pool);
    const before = await tokens.count();
    const { token } = await tokens.create('laptop');
    expect(await tokens.count()).toBe(before + 1);
    expect((await rejection(tokens.create('laptop'))).code).toBe('invalid_argument');
    expect(await tokens.revoke('laptop')).toBe(true);
    expect(await tokens.revoke('laptop')).toBe(false);
    expect(await tokens.findByToken(token)).toBeNull();
    expect(await tokens.count()).toBe(before);
    expect((await tokens.list()).find((t) => t.name === 'laptop')?.revokedAt).toEqual(expect.any(String));
    expect((await rejection(tokens.revoke('nobody'))).code).toBe('not_found');

    const again = await tokens.create('laptop');
    expect(again.token).not.toBe(token);
    expect(await tokens.findByToken(again.token)).toMatchObject({
      name: 'laptop',
      revokedAt: null,
      lastUsedAt: expect.any(String),
    });
    expect(await tokens.findByToken(token)).toBeNull();
  });

  it('rejects unusable names', async () => {
    const tokens = createTokenRepository(db.pool);
    for (const name of ['', ' ', '-leading-dash', 'a'.repeat(65), 'has space', 'semi;colon']) {
      expect((await rejection(tokens.create(name))).code).toBe('invalid_argument');
    }
  });
});

describe('replay attempt repository', () => {
  it('records attempts and lists them newest first in the contract shape', async () => {
    const { event } = await createEventStore(db.pool).insert(newEvent());
    const replays = createReplayAttemptRepository(db.pool);
    const refused = await replays.record({
      eventId: event.id,
      caller: 'ci',
      targetUrl: 'http://10.0.0.8/hook',
      resolvedIp: '10.0.0.8',
      startedAt: '2024-05-01T12:00:00.000001Z',
      delivered: false,
      responseStatus: null,
      responseMs: null,
      responseExcerpt: null,
      responseContentType: null,
      errorCode: 'invalid_argument',
      unsigned: false,
    });
    const delivered = await replays.record({
      eventId: event.id,
      caller: 'ci',
      targetUrl: 'http://127.0.0.1:3000/hook',
      resolvedIp: '127.0.0.1',
      delivered: true,
      responseStatus: 503,
      responseMs: 12.25,
      responseExcerpt: '{"error":"database is down"}',
      responseContentType: 'application/json',
      errorCode: null,
      unsigned: false,
    });
    expect(refused).toMatchObject({
      event_id: event.id,
      started_at: '2024-05-01T12:00:00.000001Z',
      error_code: 'invalid_argument',
    });
    expect(delivered).toMatchObject({
      delivered: true,
      response_status: 503,
      response_ms: 12.25,
      response_excerpt: '{"error":"database is down"}',
      response_content_type: 'application/json',
      error_code: null,
    });
    // Fields an attempt never had are absent, as the contract has them optional rather than null.
    expect(refused).not.toHaveProperty('response_excerpt');
    expect(refused).not.toHaveProperty('response_content_type');
    const history = await replays.listForEvent(event.id);
    expect(history).toEqual([delivered, refused]);
    expect(validateReplayHistory({ attempts: history })).toBe(true);
  });

  it('answers not_found for unknown events and invalid_argument for bad input', async () => {
    const replays = createReplayAttemptRepository(db.pool);
    const base = {
      caller: 'ci',
      targetUrl: null,
      resolvedIp: null,
      delivered: false,
      responseStatus: null,
      responseMs: null,
      responseExcerpt: null,
      responseContentType: null,
      errorCode: null,
      unsigned: false,
    };
    expect((await rejection(replays.record({ ...base, eventId: '01900000-0000-7000-8000-000000000000' }))).code).toBe(
      'not_found',
    );
    expect((await rejection(replays.record({ ...base, eventId: 'nope' }))).code).toBe('invalid_argument');
    const { event } = await createEventStore(db.pool).insert(newEvent());
    expect((await rejection(replays.record({ ...base, eventId: event.id, responseMs: -1 }))).code).toBe(
      'invalid_argument',
    );
    expect((await rejection(replays.record({ ...base, eventId: event.id, responseStatus: 42 }))).code).toBe(
      'invalid_argument',
    );
    expect(await replays.listForEvent('01900000-0000-7000-8000-000000000000')).toEqual([]);
  });
});
