-- The window around a partition bound in which a key takes the bound lock shrinks from an hour
-- either side to five minutes (docs/adr/time-partitions.md, "Idempotent receive").
--
-- The lock serialises two first deliveries of one key that land either side of a bound, which
-- no partition's unique index can catch. For the later of two such writers to miss the earlier
-- one, the earlier must still be uncommitted when the later is stamped, so the two stamps are
-- less apart than the earlier writer's time from stamp to commit. A key is stamped
-- (clock_timestamp(), the column's default) by the insert statement that writes it, each insert is
-- its own transaction, and the store's statement timeout is 30 s: two racing keys fall within
-- 30 s of each other, so both are inside a five-minute window whenever either is refused by it.
-- The margin covers a commit that waits on its WAL flush.
--
-- With an hour either side, every insert carrying an external id took the lock from 23:00 to
-- 01:00 UTC, and ingest's concurrent flushes ran one after the other for two hours a day
-- (ingest-performance.md, "Left open"); now for ten minutes.
CREATE OR REPLACE FUNCTION switchboard_record_external_ids() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  -- Keys near a bound of their partition, or in no dated partition.
  IF EXISTS (
    SELECT 1 FROM new_events
    WHERE new_events.external_id IS NOT NULL AND NOT EXISTS (
      SELECT 1 FROM event_partitions p
      WHERE new_events.received_at >= p.lower_bound + interval '5 minutes'
        AND new_events.received_at < p.upper_bound - interval '5 minutes'
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
