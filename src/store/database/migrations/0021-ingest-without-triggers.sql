-- Ingest writes an event's dependants itself, set-based, in the statement that stores the event,
-- and its dedupe probe reads only the key partitions a provider's retry can reach
-- (docs/adr/ingest-minimum-work.md).
--
-- Until now two AFTER INSERT statement triggers on events wrote the search queue entry and the
-- external-id key of every new row. Each trigger made PostgreSQL keep a transition table of the
-- statement's rows (the whole row, 2 KiB payload included), ran a PL/pgSQL function, and the key
-- trigger looked every new row up in event_partitions to decide whether it was near a partition
-- bound. The insert statement (src/store/events/event-insert.ts) now writes both as data-modifying
-- CTEs over its own RETURNING rows, and writes the key CTE only when the batch carries an external
-- id. Other writers (the partition upgrade, bulk seeds) write what they need themselves.
DROP TRIGGER events_enqueue_search ON events;
DROP TRIGGER events_record_external_ids ON events;
DROP FUNCTION switchboard_enqueue_search();
DROP FUNCTION switchboard_record_external_ids();
DROP FUNCTION switchboard_external_ids_stored(text[], text[]);

-- Which of the given keys are stored: element i answers for providers[i] and external_ids[i]
-- (false for a NULL external id). `at` is the time the caller's rows are stamped with (the insert
-- passes clock_timestamp()).
--
-- The dedupe window. A key is looked for only among keys stamped from 7 days before `at` to an
-- hour after it, so the probe reads the key partitions of that week, not every one retention keeps
-- (38 at 30 days of day partitions; it cost about 55 µs and 20 buffers per event in a 256-event
-- insert). Providers retry within that: Stripe and PayPal for up to 3 days, Shopify 48 hours,
-- Standard Webhooks senders about a day, and GitHub keeps a delivery for redelivery 3 days. A
-- retry that arrives later than 7 days after its first delivery is stored as a new event.
--
-- Two first deliveries of one key in flight at once. Within one partition its unique index makes
-- the later one fail (ingest then finds the stored one). Across a partition bound no index sees
-- both, so a caller within five minutes of a bound of its partition (or in no dated partition)
-- takes one transaction advisory lock before it looks: two such writers are serialised, and as
-- this function is VOLATILE its lookup takes a fresh snapshot, after the lock, so the second sees
-- the first's committed key and leaves its event out. Rows are stamped by the statement that calls
-- this, each insert is its own transaction and its statement timeout is 30 s, so two racing keys
-- are stamped less than 30 s apart and both fall inside the window whenever either is refused by
-- it (migration 0016).
--
-- The plan is kept for the session and generic: `at` is a parameter, so the partitions outside the
-- window are pruned as each execution starts.
CREATE FUNCTION switchboard_external_ids_stored(providers text[], external_ids text[], at timestamptz)
  RETURNS boolean[]
  LANGUAGE plpgsql VOLATILE
  SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM event_partitions p
    WHERE at >= p.lower_bound + interval '5 minutes' AND at < p.upper_bound - interval '5 minutes'
  ) THEN
    PERFORM pg_advisory_xact_lock(hashtext('switchboard-external-id-bound'));
  END IF;
  RETURN ARRAY(
    SELECT key.external_id IS NOT NULL AND EXISTS (
      SELECT 1 FROM event_external_ids
      WHERE event_external_ids.provider = key.provider AND event_external_ids.external_id = key.external_id
        AND event_external_ids.received_at >= at - interval '7 days'
        AND event_external_ids.received_at < at + interval '1 hour'
    )
    FROM unnest(providers, external_ids) WITH ORDINALITY AS key(provider, external_id, ord)
    ORDER BY key.ord
  );
END
$$;
