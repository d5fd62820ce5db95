/** Bulk seeding straight in SQL, for plan tests and the benchmark. */
import { sql, type CommonQueryMethods } from 'slonik';

export const SEED_EVENT_TYPES = [
  'issues.opened',
  'issues.closed',
  'push',
  'pull_request.opened',
  'pull_request.closed',
  'ping',
];

/**
 * count events over `providers` providers, one every `stepMs` milliseconds ending now-ish, with
 * ~200-byte JSON payloads. Ids are UUIDv7 built in SQL from received_at (PostgreSQL < 18 has no
 * uuidv7()), so they stay time-ordered like the application's.
 */
export async function seedEvents(
  pool: CommonQueryMethods,
  options: { count: number; providers: number; start?: number; stepMs?: number },
): Promise<void> {
  const start = options.start ?? 1;
  const stepMs = options.stepMs ?? 10;
  await pool.query(sql.unsafe`
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
      LATERAL (SELECT timestamptz '2024-01-01T00:00:00Z' + g * make_interval(secs => ${stepMs / 1000})) AS at(t)
  `);
}
