/** Bulk seeding straight in SQL, for plan tests and the benchmark. */
import { sql, type CommonQueryMethods } from 'slonik';

const SEED_EVENT_TYPES = [
  'issues.opened',
  'issues.closed',
  'push',
  'pull_request.opened',
  'pull_request.closed',
  'ping',
];

/**
 * count events over `providers` providers, event number g received at `from` + g × `stepMs`
 * milliseconds (from: default 2024-01-01, which only the DEFAULT partition holds; a time within
 * the dated partitions puts them there, as events received now are), with ~200-byte JSON payloads.
 * Ids are UUIDv7 built in SQL from received_at (PostgreSQL < 18 has no uuidv7()), so they stay
 * time-ordered like the application's. A large count is written SEED_CHUNK events a statement.
 * Each event's external-id key and search queue entry are written by the same statement, as the
 * store's insert does; `eventsOnly` leaves them out, for a database at a migration before 0011
 * (whose trigger queued events itself, and which had no keys table of its own).
 */
export async function seedEvents(
  pool: CommonQueryMethods,
  options: { count: number; providers: number; start?: number; stepMs?: number; from?: string; eventsOnly?: boolean },
): Promise<void> {
  const first = options.start ?? 1;
  for (let start = first; start < first + options.count; start += SEED_CHUNK) {
    await seedChunk(pool, { ...options, start, count: Math.min(SEED_CHUNK, first + options.count - start) });
  }
}

/** The insert's dependants, written from its RETURNING rows (event-insert.ts). */
const dependants = sql.fragment`, keyed AS (
    INSERT INTO event_external_ids (provider, external_id, event_id, received_at)
    SELECT provider, external_id, id, received_at FROM inserted WHERE external_id IS NOT NULL
  )
  INSERT INTO event_search_queue (event_id) SELECT id FROM inserted`;

/** Events a statement: a million in one would hold a transaction (and its memory) for minutes. */
const SEED_CHUNK = 100_000;

async function seedChunk(
  pool: CommonQueryMethods,
  options: { count: number; providers: number; start: number; stepMs?: number; from?: string; eventsOnly?: boolean },
): Promise<void> {
  const { start } = options;
  const stepMs = options.stepMs ?? 10;
  const from = options.from ?? '2024-01-01T00:00:00Z';
  // As the store's insert does since migration 0021: the key and the search queue entry are
  // written by the statement that stores the events.
  await pool.query(sql.unsafe`
    WITH inserted AS (
    INSERT INTO events (id, provider, event_type, trust_mode, verified, verify_detail, external_id, content_type, headers, payload, received_at)
    SELECT
      (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid,
      'provider-' || (g % ${options.providers}),
      (${sql.array(SEED_EVENT_TYPES, 'text')})[1 + (g / ${options.providers}) % ${SEED_EVENT_TYPES.length}],
      'signed', g % 7 <> 0, 'hmac-sha256 valid (X-Signature)', 'delivery-' || g, 'application/json',
      '{"content-type": "application/json"}'::jsonb,
      convert_to(format(
        '{"id":%s,"action":"opened","repository":{"full_name":"octo/repo-%s","private":false},"sender":{"login":"user%s"},"note":"%s"}',
        g, g % 50, g % 1000, md5(g::text)), 'UTF8'),
      t
    FROM generate_series(${start}::bigint, ${start + options.count - 1}::bigint) AS g,
      LATERAL (SELECT ${from}::timestamptz + g * make_interval(secs => ${stepMs / 1000})) AS at(t)
    RETURNING id, provider, external_id, received_at
    )${options.eventsOnly === true ? sql.fragment`SELECT count(*) FROM inserted` : dependants}
  `);
}
