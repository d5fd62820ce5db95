-- Ingest's external-id lookup and key trigger, cheaper per statement (docs/adr/ingest-performance.md,
-- "Where main's PostgreSQL CPU went"). Since 0013 the keys live in one partition per range, and:
-- - the insert statement looked a new key up with a subquery over every keys partition, which
--   PostgreSQL planned afresh with each statement (slonik sends no prepared statements): 0.2–0.5 ms
--   more planning per statement at 9 partitions, more with each day of retention. With a batch of
--   64 or more it also chose to read and hash every stored key instead of probing for the batch's,
--   a cost that grows with the table;
-- - the key trigger wrapped its INSERT in an exception block to rename a partition's unique-index
--   error, a subtransaction per statement.
--
-- The lookup moves into a function: PL/pgSQL keeps its plan for the session, so a statement plans a
-- function call, and the plan probes each partition's index per key (a scalar subquery, which is
-- never turned into a hash of the whole table). The trigger lets a partition's own unique-index
-- error through; ingest (event-insert.ts) recognises those names as well as the one this trigger
-- raises for a key refused across a partition bound.

-- Which of the given keys are stored, in any partition: element i answers for providers[i] and
-- external_ids[i] (false for a NULL external id). STABLE, so it reads with the calling statement's
-- snapshot, as the subquery it replaces did. The generic plan is forced: it is what a custom one
-- would be (the partition key is not in the lookup, so nothing is pruned), and for a batch of one
-- key PostgreSQL would otherwise keep planning afresh, its custom plan looking cheaper than a
-- generic one costed for ten.
CREATE FUNCTION switchboard_external_ids_stored(providers text[], external_ids text[]) RETURNS boolean[]
  LANGUAGE plpgsql STABLE
  SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  RETURN ARRAY(
    SELECT key.external_id IS NOT NULL AND (
      SELECT true FROM event_external_ids
      WHERE event_external_ids.provider = key.provider AND event_external_ids.external_id = key.external_id
      LIMIT 1
    ) IS NOT NULL
    FROM unnest(providers, external_ids) WITH ORDINALITY AS key(provider, external_id, ord)
    ORDER BY key.ord
  );
END
$$;

CREATE OR REPLACE FUNCTION switchboard_record_external_ids() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  -- Keys near a bound of their partition, or in no dated partition: see 0013.
  IF EXISTS (
    SELECT 1 FROM new_events
    WHERE new_events.external_id IS NOT NULL AND NOT EXISTS (
      SELECT 1 FROM event_partitions p
      WHERE new_events.received_at >= p.lower_bound + interval '1 hour'
        AND new_events.received_at < p.upper_bound - interval '1 hour'
    )
  ) THEN
    PERFORM pg_advisory_xact_lock(hashtext('switchboard-external-id-bound'));
    IF EXISTS (
      SELECT 1 FROM new_events JOIN event_external_ids
        ON (event_external_ids.provider, event_external_ids.external_id) = (new_events.provider, new_events.external_id)
      WHERE event_external_ids.event_id <> new_events.id
    ) THEN
      RAISE unique_violation USING CONSTRAINT = 'event_external_ids_pkey',
        MESSAGE = 'duplicate key value violates unique constraint "event_external_ids_pkey"',
        DETAIL = 'a concurrent first delivery stored this key in a neighbouring partition';
    END IF;
  END IF;
  -- A key already in its partition fails on that partition's unique index
  -- (event_external_ids_p20261204_key, event_external_ids_default_key).
  INSERT INTO event_external_ids (provider, external_id, event_id, received_at)
  SELECT provider, external_id, id, received_at FROM new_events WHERE external_id IS NOT NULL;
  RETURN NULL;
END
$$;
