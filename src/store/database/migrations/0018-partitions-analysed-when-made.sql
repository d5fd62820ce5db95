-- Partitions analysed when they are made (issue 40, docs/adr/partition-plans.md). PostgreSQL
-- assumes a table nothing has analysed yet holds at least 10 pages, so the week of empty
-- partitions made ahead, and every deliveries partition of an instance that has forwarded nothing,
-- were planned as data: the forward-state marks of a list page got two parallel workers over them.
-- Analysed, an empty partition counts as the 0 pages it has, and from then on the estimate follows
-- its real size as rows arrive, whether autovacuum runs or not.
--
-- Each new partition is analysed as it is made; the existing empty ones are analysed here (a full
-- one is autovacuum's: analysing it now would hold up the start).
DO $$
DECLARE
  partition regclass;
BEGIN
  FOR partition IN
    SELECT inhrelid::regclass FROM pg_inherits
    WHERE inhparent IN ('events'::regclass, 'replay_attempts'::regclass, 'deliveries'::regclass,
      'delivery_attempts'::regclass, 'event_search'::regclass, 'event_external_ids'::regclass)
  LOOP
    IF pg_relation_size(partition) = 0 THEN
      EXECUTE format('ANALYZE %s', partition);
    END IF;
  END LOOP;
END
$$;

-- As in 0013, each partition analysed once made.
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
  FOREACH parent IN ARRAY ARRAY['events', 'replay_attempts', 'deliveries', 'delivery_attempts', 'event_search',
      'event_external_ids'] LOOP
    EXECUTE format('ANALYZE %I', parent || '_p' || suffix);
  END LOOP;
  INSERT INTO event_partitions (lower_bound, upper_bound, suffix) VALUES (lo, hi, suffix);
  RETURN true;
END
$$;
