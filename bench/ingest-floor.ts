/**
 * The floor under ingest (issue 40): the rows switchboard writes for a stored webhook, written by
 * batched statements straight from a client, with no HTTP server, no verification and no lookup.
 * What it reaches is the physical limit of this machine and PostgreSQL for those rows, and
 * bench/ingest.ts prints switchboard's throughput over it beside its ratio to the naive receiver.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/ingest-floor.ts
 *   … --seconds 5 --batch 64 --connections 2
 *
 * Per event it writes what the store's insert writes since migration 0021 (event-insert.ts): the
 * events row (same columns, a 2 KiB GitHub payload, the store's schema and indexes in a fresh
 * database of its own), the external-id key and the search queue entry, in one named prepared
 * statement per batch. It prints events/s and the backends' CPU per event (from /proc, so load
 * elsewhere does not count).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { createLogger } from '../src/log/logger.ts';
import { createDatabasePool } from '../src/store/database/database.ts';
import { migrate } from '../src/store/database/migrate.ts';

const CLOCK_TICKS_PER_SECOND = 100;

export interface FloorResult {
  events: number;
  seconds: number;
  perSecond: number;
  /** PostgreSQL backend CPU per stored event, µs. */
  backendUs: number;
  /** This process's CPU per stored event (building and sending the batches), µs. */
  clientUs: number;
}

/** The statement: the store's columns, and the two dependants the store writes with them. */
const FLOOR_INSERT = `
  WITH inserted AS (
    INSERT INTO events (id, provider, event_type, trust_mode, verified, passed_check, verify_detail, external_id,
      content_type, source_ip, headers, payload, received_size, summary, request_method, request_path, request_query,
      response_status, handshake)
    SELECT id, 'github', 'issues.opened', 'signed', true, true, 'hmac-sha256 valid (X-Hub-Signature-256)', external_id,
      'application/json', '127.0.0.1', headers, payload, NULL, 'issues.opened #1 in octo/repo', 'POST', '/hooks/github',
      '', 202, false
    FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::bytea[]) AS input(id, external_id, headers, payload)
    RETURNING id, provider, external_id, received_at
  ), keyed AS (
    INSERT INTO event_external_ids (provider, external_id, event_id, received_at)
    SELECT provider, external_id, id, received_at FROM inserted
  )
  INSERT INTO event_search_queue (event_id) SELECT id FROM inserted
`;

function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/** A fresh database with the store's migrations; answers its URL. */
async function freshStoreDatabase(adminUrl: string): Promise<string> {
  const database = `ingestfloor_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database} TEMPLATE template0 ENCODING 'UTF8'`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const pool = await createDatabasePool(url.toString(), { maximumPoolSize: 1 });
  await migrate(pool, createLogger({ level: 'warn' }));
  await pool.end();
  return url.toString();
}

async function dropDatabase(adminUrl: string, url: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${new URL(url).pathname.slice(1)} WITH (FORCE)`);
  await admin.end();
}

/** One writer: batches of `batch` events, back to back, until `until` (ms since the epoch). */
async function writer(client: pg.Client, payload: Buffer, batch: number, until: number): Promise<number> {
  let written = 0;
  const headers = JSON.stringify({ 'content-type': 'application/json', 'x-github-event': 'issues' });
  while (Date.now() < until) {
    const ids = Array.from({ length: batch }, () => uuidv7());
    await client.query({
      name: 'floor-insert',
      text: FLOOR_INSERT,
      values: [ids, ids.map(() => randomUUID()), ids.map(() => headers), ids.map(() => payload)],
    });
    written += batch;
  }
  return written;
}

/**
 * Writes for `seconds` on `connections` connections of a fresh database of the store's schema,
 * and measures. The database is dropped afterwards.
 */
export async function measureFloor(
  adminUrl: string,
  options: { seconds: number; batch: number; connections: number; payload: Buffer },
): Promise<FloorResult> {
  const url = await freshStoreDatabase(adminUrl);
  const clients = Array.from({ length: options.connections }, () => new pg.Client({ connectionString: url }));
  try {
    await Promise.all(clients.map((client) => client.connect()));
    const pids = await Promise.all(
      clients.map(async (client) => {
        const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        return Number(rows[0]?.pid);
      }),
    );
    // Warm: plan the named statement once on each connection.
    await Promise.all(clients.map((client) => writer(client, options.payload, options.batch, 0)));
    const backendBefore = pids.map(processCpuSeconds);
    const clientBefore = process.cpuUsage();
    const started = performance.now();
    const until = Date.now() + options.seconds * 1000;
    const counts = await Promise.all(clients.map((client) => writer(client, options.payload, options.batch, until)));
    const seconds = (performance.now() - started) / 1000;
    const backend = pids.reduce((sum, pid, i) => sum + processCpuSeconds(pid) - (backendBefore[i] ?? 0), 0);
    const clientCpu = process.cpuUsage(clientBefore);
    const events = counts.reduce((sum, n) => sum + n, 0);
    return {
      events,
      seconds,
      perSecond: events / seconds,
      backendUs: (backend * 1e6) / events,
      clientUs: (clientCpu.user + clientCpu.system) / events,
    };
  } finally {
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
    await dropDatabase(adminUrl, url);
  }
}

/** The bench's 2 KiB GitHub issues payload (as bench/ingest-statements.ts builds it). */
function floorPayload(bytes = 2048): Buffer {
  const sample = JSON.parse(readFileSync(new URL('../catalog/github/issues.json', import.meta.url), 'utf8')) as {
    issue: { body: string; assignees?: unknown };
  };
  delete sample.issue.assignees;
  sample.issue.body = '';
  sample.issue.body = 'x'.repeat(Math.max(0, bytes - Buffer.byteLength(JSON.stringify(sample))));
  return Buffer.from(JSON.stringify(sample));
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '5' },
      batch: { type: 'string', default: '64' },
      connections: { type: 'string', default: '2' },
      rounds: { type: 'string', default: '3' },
    },
  });
  const adminUrl = process.env['DATABASE_URL'];
  if (!adminUrl) throw new Error('DATABASE_URL must name a PostgreSQL server');
  const payload = floorPayload();
  for (let round = 1; round <= Number(values.rounds); round += 1) {
    const result = await measureFloor(adminUrl, {
      seconds: Number(values.seconds),
      batch: Number(values.batch),
      connections: Number(values.connections),
      payload,
    });
    process.stdout.write(
      `round ${round}: ${result.events} events in ${result.seconds.toFixed(1)} s = ${result.perSecond.toFixed(0)}/s; ` +
        `PostgreSQL CPU ${result.backendUs.toFixed(0)} µs/event, client ${result.clientUs.toFixed(0)} µs/event\n`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
