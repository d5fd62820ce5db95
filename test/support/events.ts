/** Builders for events in store tests. */
import { sql, type DatabasePool } from 'slonik';
import { v7 as uuidv7 } from 'uuid';
import type { NewEvent } from '../../src/store/events/event-store.ts';

/** The fields of an event summary, sorted, as list_webhook_events (MCP) and /api/events answer them. */
export const SUMMARY_FIELDS: readonly string[] = [
  'event_type',
  'id',
  'payload_size',
  'provider',
  'received_at',
  'summary',
  'trust_mode',
  'verified',
];

let counter = 0;

export function newEvent(overrides: Partial<NewEvent> = {}): NewEvent {
  counter += 1;
  return {
    provider: 'github',
    eventType: 'issues.opened',
    trustMode: 'signed',
    verified: true,
    verifyDetail: 'hmac-sha256 valid (X-Hub-Signature-256)',
    externalId: null,
    contentType: 'application/json',
    sourceIp: '127.0.0.1',
    headers: { 'content-type': 'application/json', 'x-github-event': 'issues' },
    payload: Buffer.from(JSON.stringify({ action: 'opened', n: counter })),
    ...overrides,
  };
}

/** Forces received_at, e.g. to put hundreds of events on the same microsecond. */
export async function setReceivedAt(pool: DatabasePool, ids: readonly string[], receivedAt: string): Promise<void> {
  await pool.query(sql.unsafe`
    UPDATE events SET received_at = ${receivedAt}::timestamptz WHERE id = ANY(${sql.array([...ids], 'uuid')})
  `);
}

/**
 * Inserts events that arrive already carrying the given received_at, in one statement, as a
 * concurrent writer would: unlike setReceivedAt, a reader can never see them at another position.
 */
export async function insertAt(
  pool: DatabasePool,
  events: ReadonlyArray<{ provider: string; eventType: string }>,
  receivedAt: string,
): Promise<string[]> {
  const ids = events.map(() => uuidv7());
  // Queued for search by the same statement, as the store's insert does (migration 0021).
  await pool.query(sql.unsafe`
    WITH inserted AS (
      INSERT INTO events (id, provider, event_type, trust_mode, verified, verify_detail, headers, payload, received_at)
      SELECT id, provider, event_type, 'open', false, 'no verification: open provider', '{}'::jsonb, '\\x7b7d'::bytea, ${receivedAt}::timestamptz
      FROM ${sql.unnest(
        events.map((event, i) => [ids[i] ?? '', event.provider, event.eventType]),
        ['uuid', 'text', 'text'],
      )} AS input(id, provider, event_type)
      RETURNING id
    )
    INSERT INTO event_search_queue (event_id) SELECT id FROM inserted
  `);
  return ids;
}
