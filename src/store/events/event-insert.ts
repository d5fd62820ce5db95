/**
 * Writing events: ingest group-commits, so this is the hot path. A whole batch is one statement
 * (unnest of column arrays) that also queues each event's forward deliveries and announces what
 * it stored; retried deliveries (same provider and external id) come back as duplicates.
 */
import { sql, UniqueIntegrityConstraintViolationError, type DatabasePool, type FragmentSqlToken } from 'slonik';
import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import { ANNOUNCE_INSERTED } from './announcement.ts';
import { encodeBinaryArray, type BinaryElementType } from '../sql/binary-array.ts';
import { isCheckedTrustMode, summaryFromRow, summaryRow } from './event-mapping.ts';
import type { InsertResult, NewEvent } from './event-store.ts';
import { receivedAtUtc } from './list-statement.ts';
import { checkNewEvent } from './new-event-check.ts';
import { storable, storableHeaders, storableOrNull } from '../sql/storable-text.ts';

/**
 * The unique keys a provider's retry collides with: a keys partition's own index (migration 0013:
 * event_external_ids_p20261204_key, event_external_ids_default_key). Across a partition bound the
 * lookup itself waits for the other writer (migration 0021), so nothing else is refused.
 */
const EXTERNAL_ID_KEY = /^event_external_ids_(p\d{8}_key|default_key)$/;

/**
 * insertMany writes a batch in one statement up to these sizes and splits beyond them: the
 * payloads travel as one binary bytea[] parameter, and a PostgreSQL protocol message is capped at
 * 1 GB, well above the payload bound kept here to limit the memory one statement pins.
 */
const MAX_STATEMENT_EVENTS = 1_000;
const MAX_STATEMENT_PAYLOAD_BYTES = 64 * 1024 * 1024;

const insertedRow = summaryRow.extend({ ord: z.number().int(), duplicate: z.boolean() });
type InsertedRow = z.infer<typeof insertedRow>;

/** What goes in passed_check: the outcome, with the defaults NewEvent documents made explicit. */
function passedCheckToStore(event: NewEvent): boolean | null {
  if (!isCheckedTrustMode(event.trustMode)) return null;
  return event.passedCheck ?? (event.trustMode === 'signed' ? event.verified : false);
}

const sameKey = (provider: string, externalId: string): string => `${provider}\u0000${externalId}`;

function statementChunks<T extends { event: NewEvent }>(items: readonly T[]): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = item.event.payload.length;
    if (current.length > 0 && (current.length >= MAX_STATEMENT_EVENTS || bytes + size > MAX_STATEMENT_PAYLOAD_BYTES)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
/** Chooses the forward rules that take an event: each gets an outbox row in the event's statement. */
type ForwardRulesFor = (event: NewEvent) => readonly string[];

/** No lease (NewEvent.replyDelivery.leaseMs null): the row waits for ingest to settle it. */
const NO_LEASE = -1;

/**
 * The outbox rows of reply attempts (NewEvent.replyDelivery), when the rule takes the event:
 * written already claimed by ingest, as attempt 1, so no dispatcher claims them while ingest
 * sends; without a lease nothing ever claims them again, with one the outbox retries once it ends.
 */
function replyRows(
  events: ReadonlyArray<{ event: NewEvent }>,
  ids: readonly string[],
  rulesOf: (event: NewEvent) => readonly string[],
): FragmentSqlToken {
  const rows = events.flatMap(({ event }, index) => {
    const reply = event.replyDelivery;
    if (reply === undefined || !rulesOf(event).includes(reply.rule)) return [];
    return [[reply.id, ids[index] ?? '', reply.rule, reply.claim, reply.leaseMs ?? NO_LEASE]];
  });
  if (rows.length === 0) return sql.fragment``;
  return sql.fragment`, replying AS (
    INSERT INTO deliveries (id, event_id, event_received_at, rule, state, attempt_count, claim, next_attempt_at)
    SELECT reply.id, reply.event_id, inserted.received_at, reply.rule, 'delivering', 1, reply.claim,
      CASE WHEN reply.lease_ms = ${NO_LEASE} THEN NULL
        ELSE clock_timestamp() + reply.lease_ms * interval '1 millisecond' END
    FROM ${sql.unnest(rows, ['uuid', 'uuid', 'text', 'uuid', 'int8'])} AS reply(id, event_id, rule, claim, lease_ms)
    JOIN inserted ON inserted.id = reply.event_id
  )`;
}

/**
 * One INSERT … SELECT FROM unnest(…) for the batch, answering the rows it inserted; a row that
 * collided with a stored delivery is simply absent. The statement is kept this plain on purpose:
 * it runs for every group commit, and PostgreSQL plans it in a tenth of a millisecond where a
 * version that also looked up the duplicates took two.
 */
async function insertRows(
  pool: DatabasePool,
  forwardRulesFor: ForwardRulesFor | undefined,
  events: ReadonlyArray<{ ord: number; event: NewEvent }>,
): Promise<Map<number, InsertedRow>> {
  const ids = events.map(() => uuidv7());
  const providers = events.map(({ event }) => storable(event.provider));
  const eventTypes = events.map(({ event }) => storable(event.eventType));
  const insert = insertStatement(events, { ids, providers, eventTypes });
  // The outbox: a delivery row per matching forward rule, in the same statement (so the same
  // transaction) as its event; an event that collided with a stored one queues nothing new.
  const rulesOf = (event: NewEvent): readonly string[] => (forwardRulesFor ? forwardRulesFor(event) : []);
  const deliveries = events.flatMap(({ event }, index) =>
    rulesOf(event)
      .filter((rule) => rule !== event.replyDelivery?.rule)
      .map((rule) => [uuidv7(), ids[index] ?? '', rule]),
  );
  const queue =
    deliveries.length === 0
      ? sql.fragment``
      : sql.fragment`, queued AS (
          INSERT INTO deliveries (id, event_id, event_received_at, rule)
          SELECT queue.id, queue.event_id, inserted.received_at, queue.rule
          FROM ${sql.unnest(deliveries, ['uuid', 'uuid', 'text'])} AS queue(id, event_id, rule)
          JOIN inserted ON inserted.id = queue.event_id
        )`;
  const replying = replyRows(events, ids, rulesOf);
  // The event's own dependants, set-based from the rows just inserted (no trigger since migration
  // 0021): its external-id key, only when it has one, and its search queue entry.
  const keyed = events.some(({ event }) => event.externalId !== null)
    ? sql.fragment`, keyed AS (
        INSERT INTO event_external_ids (provider, external_id, event_id, received_at)
        SELECT provider, external_id, id, received_at FROM inserted WHERE external_id IS NOT NULL
      )`
    : sql.fragment``;
  // Every insert announces the events it newly stores (announcement.ts): the one way readers and
  // other instances hear of them.
  let rows: readonly unknown[];
  try {
    // Rows pass the result parser untouched (z.unknown()): the hot path reads two text columns,
    // checked by hand in receivedAtOf, rather than a zod parse of every row of every batch.
    rows = await pool.any(sql.type(z.unknown())`
      WITH inserted AS (${insert})${keyed}, search_queued AS (
        INSERT INTO event_search_queue (event_id) SELECT id FROM inserted
      )${queue}${replying}
      SELECT inserted.id, inserted.received_at_utc FROM inserted ${ANNOUNCE_INSERTED}
    `);
  } catch (error) {
    // A concurrent transaction stored the same delivery after this statement's lookup: the
    // partition's unique key refused the batch, and the caller looks the stored event up and inserts the rest.
    if (error instanceof UniqueIntegrityConstraintViolationError && EXTERNAL_ID_KEY.test(error.constraint ?? '')) {
      return new Map();
    }
    throw error;
  }
  const receivedAt = receivedAtOf(rows);
  const inserted = new Map<number, InsertedRow>();
  events.forEach(({ ord, event }, index) => {
    const id = ids[index];
    const at = id === undefined ? undefined : receivedAt.get(id);
    // Absent from RETURNING: it collided with a stored delivery.
    if (id === undefined || at === undefined) return;
    inserted.set(ord, {
      ord,
      duplicate: false,
      id,
      provider: providers[index] ?? storable(event.provider),
      event_type: eventTypes[index] ?? storable(event.eventType),
      trust_mode: event.trustMode,
      verified: event.verified,
      payload_size: event.payload.length,
      received_at_utc: at,
    });
  });
  return inserted;
}

/** Each inserted id's received_at, from the insert's rows (id and received_at_utc, both text). */
function receivedAtOf(rows: readonly unknown[]): Map<string, string> {
  const receivedAt = new Map<string, string>();
  for (const row of rows) {
    const { id, received_at_utc: at } = (row ?? {}) as { id?: unknown; received_at_utc?: unknown };
    if (typeof id !== 'string' || typeof at !== 'string') throw new TypeError('the insert answered a malformed row');
    receivedAt.set(id, at);
  }
  return receivedAt;
}

/**
 * The insert's `stored` column: whether each event's key is already stored, so it is a retry.
 * The lookup is a function, so its plan over the keys partitions is made once per connection, not
 * with every statement (migrations 0015 and 0027), and it reads only the partitions of the dedupe
 * window (migration 0021). As a subquery it runs once, at execution. A batch without external ids
 * (queue messages, most open providers) has nothing to look up.
 */
function storedKeys(
  providers: Buffer,
  externalIds: Buffer,
  events: ReadonlyArray<{ event: NewEvent }>,
): FragmentSqlToken {
  if (!events.some(({ event }) => event.externalId !== null)) {
    return sql.fragment`${sql.binary(
      encodeBinaryArray(
        'bool',
        events.map(() => false),
      ),
    )}::bool[]`;
  }
  return sql.fragment`(SELECT switchboard_external_ids_stored(${sql.binary(providers)}::text[], ${sql.binary(externalIds)}::text[], clock_timestamp()))`;
}

/** The INSERT … SELECT FROM unnest(…) itself: one array parameter per column. */
function insertStatement(
  events: ReadonlyArray<{ ord: number; event: NewEvent }>,
  known: { ids: string[]; providers: string[]; eventTypes: string[] },
): FragmentSqlToken {
  // unnest turns the arrays back into rows. Each array travels in binary (binary-array.ts), cast
  // to its type in the statement; the casts are written out rather than built as fragments, since
  // slonik's fragment handling costs more per statement than the arrays do.
  const column = <T extends BinaryElementType>(
    type: T,
    value: (event: NewEvent) => Parameters<typeof encodeBinaryArray<T>>[1][number],
  ) =>
    sql.binary(
      encodeBinaryArray(
        type,
        events.map(({ event }) => value(event)),
      ),
    );
  const providers = encodeBinaryArray('text', known.providers);
  const externalIds = encodeBinaryArray(
    'text',
    events.map(({ event }) => storableOrNull(event.externalId)),
  );
  return sql.fragment`
    INSERT INTO events (id, provider, event_type, trust_mode, verified, passed_check, verify_detail, external_id, content_type, source_ip, headers, payload, received_size,
      summary, request_method, request_path, request_query, response_status, handshake)
    SELECT id, provider, event_type, trust_mode, verified, passed_check, verify_detail, external_id, content_type, source_ip, headers, payload, received_size,
      summary, request_method, request_path, request_query, response_status, handshake
    FROM unnest(
      ${sql.binary(encodeBinaryArray('uuid', known.ids))}::uuid[],
      ${sql.binary(providers)}::text[],
      ${sql.binary(encodeBinaryArray('text', known.eventTypes))}::text[],
      ${column('text', (event) => event.trustMode)}::text[],
      ${column('bool', (event) => event.verified)}::bool[],
      ${column('bool', passedCheckToStore)}::bool[],
      ${column('text', (event) => storable(event.verifyDetail))}::text[],
      ${sql.binary(externalIds)}::text[],
      ${column('text', (event) => storableOrNull(event.contentType))}::text[],
      ${column('text', (event) => storableOrNull(event.sourceIp))}::text[],
      ${column('jsonb', (event) => storableHeaders(event.headers))}::jsonb[],
      ${column('bytea', (event) => event.payload)}::bytea[],
      ${column('int4', (event) => event.receivedSize ?? null)}::int4[],
      ${column('text', (event) => storableOrNull(event.summary ?? null))}::text[],
      ${column('text', (event) => storableOrNull(event.request?.method ?? null))}::text[],
      ${column('text', (event) => storableOrNull(event.request?.path ?? null))}::text[],
      ${column('text', (event) => storableOrNull(event.request?.query ?? null))}::text[],
      ${column('int2', (event) => event.request?.responseStatus ?? null)}::int2[],
      ${column('bool', (event) => event.handshake === true)}::bool[],
      ${storedKeys(providers, externalIds, events)}
    ) AS input(id, provider, event_type, trust_mode, verified, passed_check, verify_detail, external_id, content_type,
      source_ip, headers, payload, received_size, summary, request_method, request_path, request_query, response_status,
      handshake, stored)
    WHERE NOT input.stored
    RETURNING events.id, events.received_at, events.provider, events.external_id,
      ${receivedAtUtc('events')} AS received_at_utc
  `;
}

/**
 * A conflicting row committed by a concurrent transaction after our statement began is invisible
 * to that statement's snapshot; a fresh statement sees it.
 */
async function findStored(
  pool: DatabasePool,
  events: ReadonlyArray<{ ord: number; event: NewEvent }>,
): Promise<Map<number, InsertedRow>> {
  const tuples = events.map(({ ord, event }) => [ord, storable(event.provider), storableOrNull(event.externalId)]);
  const rows = await pool.any(sql.type(insertedRow)`
    SELECT input.ord, true AS duplicate, events.id, events.provider, events.event_type, events.trust_mode,
      events.verified, events.payload_size, ${receivedAtUtc('events')} AS received_at_utc
    FROM ${sql.unnest(tuples, ['int4', 'text', 'text'])} AS input(ord, provider, external_id)
    JOIN event_external_ids ON event_external_ids.provider = input.provider
      AND event_external_ids.external_id = input.external_id
    JOIN events ON events.id = event_external_ids.event_id AND events.received_at = event_external_ids.received_at
  `);
  return new Map(rows.map((row) => [row.ord, row]));
}

/**
 * insertMany for the pool: forwardRulesFor names the forward rules that take an event (the
 * outbox rows written in the same statement); absent, the insert queues nothing.
 */
export function createEventInsert(
  pool: DatabasePool,
  forwardRulesFor: ForwardRulesFor | undefined,
): (events: readonly NewEvent[]) => Promise<InsertResult[]> {
  async function insertMany(events: readonly NewEvent[]): Promise<InsertResult[]> {
    if (events.length === 0) return [];
    events.forEach(checkNewEvent);

    // A retry inside the same batch refers to the first occurrence; only that one is written.
    const firstByKey = new Map<string, number>();
    const firstOf: number[] = events.map((event, ord) => {
      if (event.externalId === null) return ord;
      const key = sameKey(storable(event.provider), storable(event.externalId));
      const first = firstByKey.get(key);
      if (first !== undefined) return first;
      firstByKey.set(key, ord);
      return ord;
    });

    const results = new Map<number, InsertedRow>();
    const firsts = events.map((event, ord) => ({ ord, event })).filter(({ ord }) => firstOf[ord] === ord);
    for (const chunk of statementChunks(firsts)) {
      let pending = chunk;
      for (let attempt = 0; attempt < 3 && pending.length > 0; attempt += 1) {
        for (const [ord, row] of await insertRows(pool, forwardRulesFor, pending)) results.set(ord, row);
        pending = pending.filter(({ ord }) => !results.has(ord));
        if (pending.length === 0) break;
        for (const [ord, row] of await findStored(pool, pending)) results.set(ord, row);
        // Still missing: the row we collided with was deleted meanwhile (retention), so insert again.
        pending = pending.filter(({ ord }) => !results.has(ord));
      }
      if (pending.length > 0) throw new Error(`could not store or find ${pending.length} event(s) after retries`);
    }

    return events.map((_event, ord) => {
      const first = firstOf[ord] ?? ord;
      const row = results.get(first);
      if (!row) throw new Error(`no result for event ${ord}`);
      return { event: summaryFromRow(row), duplicate: row.duplicate || first !== ord };
    });
  }

  return insertMany;
}
