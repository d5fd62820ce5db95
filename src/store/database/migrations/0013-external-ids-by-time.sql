-- External-id keys are range-partitioned by their event's received_at like everything else that
-- hangs off an event (docs/adr/time-partitions.md, "Idempotent receive"), so that retention drops
-- a day's keys with its events instead of deleting them row by row: at 10M events, deleting the
-- keys of two day partitions 1,000 at a time took 24.9 s of a 25 s retention run.
--
-- A unique index on a partitioned table must contain the partition key, which would make a key
-- unique within one day only. So each partition has its own unique index on (provider,
-- external_id), created with it, and the parent has none:
-- - a retry that arrives any time later is found by the insert's lookup, which reads every
--   partition's index (the key's time is not known);
-- - two first deliveries of one key in flight at once land in the same partition, whose index
--   makes the later one fail as before, unless they straddle a partition bound. A key stamped
--   within an hour of a bound of its partition (or outside every dated range) therefore takes one
--   advisory lock, held to commit, and looks for the key in every partition with a fresh snapshot
--   before it is written: two such writers are serialised, and the second sees the first. A
--   writer's key is stamped (clock_timestamp()) in the statement that writes it, whose timeout is
--   far below an hour, so two keys on either side of a bound are both within the hour.
-- Whichever check refuses a key, the error names event_external_ids_pkey, the constraint ingest
-- (event-insert.ts) recognises as "a concurrent first delivery was stored".
--
-- Existing keys are copied into the new partitions in this migration's transaction (about 3 s
-- per million keys); the per-partition indexes are built after the copy, in one pass each.

ALTER TABLE event_external_ids RENAME TO event_external_ids_unpartitioned;
ALTER INDEX event_external_ids_pkey RENAME TO unpartitioned_event_external_ids_pkey;
ALTER INDEX event_external_ids_received_idx RENAME TO unpartitioned_event_external_ids_received_idx;

CREATE TABLE event_external_ids (
  provider text NOT NULL,
  external_id text NOT NULL,
  event_id uuid NOT NULL,
  received_at timestamptz NOT NULL
) PARTITION BY RANGE (received_at);

CREATE TABLE event_external_ids_default PARTITION OF event_external_ids DEFAULT;

DO $$
DECLARE
  p record;
BEGIN
  FOR p IN SELECT lower_bound, upper_bound, suffix FROM event_partitions LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF event_external_ids FOR VALUES FROM (%L) TO (%L)',
      'event_external_ids_p' || p.suffix, p.lower_bound, p.upper_bound);
  END LOOP;
END
$$;

INSERT INTO event_external_ids (provider, external_id, event_id, received_at)
SELECT provider, external_id, event_id, received_at FROM event_external_ids_unpartitioned;

DROP TABLE event_external_ids_unpartitioned;

CREATE UNIQUE INDEX event_external_ids_default_key ON event_external_ids_default (provider, external_id);

DO $$
DECLARE
  p record;
BEGIN
  FOR p IN SELECT suffix FROM event_partitions LOOP
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (provider, external_id)',
      'event_external_ids_p' || p.suffix || '_key', 'event_external_ids_p' || p.suffix);
  END LOOP;
END
$$;

-- As in 0011, plus the range's external-id keys and their unique index.
CREATE OR REPLACE FUNCTION switchboard_create_partition(lo timestamptz, hi timestamptz) RETURNS boolean
  LANGUAGE plpgsql
AS $$
DECLARE
  suffix text := to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD');
  parent text;
BEGIN
  IF EXISTS (SELECT 1 FROM event_partitions p WHERE p.lower_bound < hi AND p.upper_bound > lo) THEN
    RETURN false;
  END IF;
  IF EXISTS (SELECT 1 FROM events_default d WHERE d.received_at >= lo AND d.received_at < hi) THEN
    RETURN false;
  END IF;
  FOREACH parent IN ARRAY ARRAY['events', 'replay_attempts', 'deliveries', 'delivery_attempts', 'event_search',
      'event_external_ids'] LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', parent || '_p' || suffix, parent, lo, hi);
  END LOOP;
  EXECUTE format('CREATE UNIQUE INDEX %I ON %I (provider, external_id)',
    'event_external_ids_p' || suffix || '_key', 'event_external_ids_p' || suffix);
  INSERT INTO event_partitions (lower_bound, upper_bound, suffix) VALUES (lo, hi, suffix);
  RETURN true;
END
$$;

CREATE OR REPLACE FUNCTION switchboard_record_external_ids() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  -- Keys near a bound of their partition, or in no dated partition: see the top of this file.
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
  BEGIN
    INSERT INTO event_external_ids (provider, external_id, event_id, received_at)
    SELECT provider, external_id, id, received_at FROM new_events WHERE external_id IS NOT NULL;
  EXCEPTION WHEN unique_violation THEN
    -- A partition's own index (event_external_ids_p20261204_key): one name for every partition.
    RAISE unique_violation USING CONSTRAINT = 'event_external_ids_pkey',
      MESSAGE = 'duplicate key value violates unique constraint "event_external_ids_pkey"',
      DETAIL = SQLERRM;
  END;
  RETURN NULL;
END
$$;
