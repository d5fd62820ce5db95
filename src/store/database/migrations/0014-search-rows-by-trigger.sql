-- Search rows follow their event by trigger instead of by foreign key, as the keys and deliveries
-- have since 0012. Retention detaches an events partition before dropping it, and the detach
-- checks every foreign key to events against the partition's rows: the check of event_search's
-- joined the remaining search rows (2M at 3M events) with the partition's 1M events, 10.3 s of an
-- 11.9 s run (with the key, 33 ms without). The indexer, the one writer of search rows for live
-- events, locks each event it indexes (FOR KEY SHARE, as the key's check did), so an event deleted
-- meanwhile gets no row; the triggers below take the rows with a delete and keep them with a move.
ALTER TABLE event_search DROP CONSTRAINT event_search_event_fkey;

CREATE OR REPLACE FUNCTION switchboard_forget_event_dependants() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  DELETE FROM event_external_ids USING old_events
  WHERE (event_external_ids.provider, event_external_ids.external_id, event_external_ids.event_id,
      event_external_ids.received_at) = (old_events.provider, old_events.external_id, old_events.id, old_events.received_at);
  DELETE FROM deliveries USING old_events
  WHERE (deliveries.event_id, deliveries.event_received_at) = (old_events.id, old_events.received_at);
  DELETE FROM event_search USING old_events
  WHERE (event_search.event_id, event_search.event_received_at) = (old_events.id, old_events.received_at);
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION switchboard_move_event_dependants() RETURNS trigger
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
  ), searched AS (
    UPDATE event_search SET event_received_at = moved.now FROM moved
    WHERE (event_search.event_id, event_search.event_received_at) = (moved.id, moved.was)
    RETURNING 1
  )
  -- A moved delivery takes its attempts along: their key to deliveries cascades the update.
  UPDATE deliveries SET event_received_at = moved.now FROM moved
  WHERE (deliveries.event_id, deliveries.event_received_at) = (moved.id, moved.was);
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION switchboard_truncate_event_dependants() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  TRUNCATE event_external_ids, deliveries CASCADE;
  -- A DELETE, not part of the TRUNCATE: a TRUNCATE that names event_search as well as events
  -- (tests do) holds it in use, and a second TRUNCATE of it here would be refused.
  DELETE FROM event_search;
  RETURN NULL;
END
$$;
