-- The external-id key and the forward deliveries follow their event by trigger instead of by
-- foreign key (docs/adr/ingest-performance.md, "Time partitions and the foreign keys").
--
-- A foreign key checks every inserted row with a query into the referenced table. With events
-- partitioned, that query's cached plan locks every partition of events before pruning to one:
-- the check of a key cost about 100 µs of backend CPU per stored event at 9 partitions and 170 µs
-- at 38 (two thirds of the insert's cost, and growing with retention), and that of a queued
-- delivery about 90 µs more. Neither check proves anything: both tables are written only by the
-- statement that stores the event, from the rows it has just inserted (and by the partition
-- upgrade, which moves rows that had the keys). What the foreign keys did for the rows, a delete
-- of the event that takes them with it (and a delivery's attempts, by their own key) and a move
-- that keeps them with the event, is done by the statement triggers below: one statement per
-- table and event statement, not one query per row. A TRUNCATE of events (which the foreign keys
-- made take them too, with CASCADE) empties them as well: a key left without its event would
-- make every retry of that delivery look like a duplicate of nothing.
ALTER TABLE event_external_ids DROP CONSTRAINT event_external_ids_event_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_fkey;

CREATE FUNCTION switchboard_forget_event_dependants() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  DELETE FROM event_external_ids USING old_events
  WHERE (event_external_ids.provider, event_external_ids.external_id, event_external_ids.event_id,
      event_external_ids.received_at) = (old_events.provider, old_events.external_id, old_events.id, old_events.received_at);
  DELETE FROM deliveries USING old_events
  WHERE (deliveries.event_id, deliveries.event_received_at) = (old_events.id, old_events.received_at);
  RETURN NULL;
END
$$;

CREATE TRIGGER events_forget_dependants
  AFTER DELETE ON events
  REFERENCING OLD TABLE AS old_events
  FOR EACH STATEMENT EXECUTE FUNCTION switchboard_forget_event_dependants();

-- An event's id never changes (it is minted once, a UUIDv7); its received_at may (an import of old
-- data, a test dating an event). A row moved to another partition is in both transition tables.
CREATE FUNCTION switchboard_move_event_dependants() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  WITH moved AS (
    SELECT old_events.id, old_events.provider, old_events.external_id, old_events.received_at AS was,
      new_events.received_at AS now
    FROM old_events JOIN new_events ON new_events.id = old_events.id
    WHERE old_events.received_at IS DISTINCT FROM new_events.received_at
  ), keys AS (
    UPDATE event_external_ids SET received_at = moved.now FROM moved
    WHERE (event_external_ids.provider, event_external_ids.external_id, event_external_ids.event_id)
      = (moved.provider, moved.external_id, moved.id)
    RETURNING 1
  )
  -- A moved delivery takes its attempts along: their key to deliveries cascades the update.
  UPDATE deliveries SET event_received_at = moved.now FROM moved
  WHERE (deliveries.event_id, deliveries.event_received_at) = (moved.id, moved.was);
  RETURN NULL;
END
$$;

CREATE TRIGGER events_move_dependants
  AFTER UPDATE ON events
  REFERENCING OLD TABLE AS old_events NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION switchboard_move_event_dependants();

CREATE FUNCTION switchboard_truncate_event_dependants() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  TRUNCATE event_external_ids, deliveries CASCADE;
  RETURN NULL;
END
$$;

CREATE TRIGGER events_truncate_dependants
  AFTER TRUNCATE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION switchboard_truncate_event_dependants();
