-- Payload search moves off the ingest path (docs/adr/deferred-search-index.md).
--
-- Computing payload_json and payload_tsv as generated columns, and maintaining their GIN indexes,
-- cost about 125 µs of database CPU per 2 KiB event: six times the rest of the insert. Every
-- webhook paid that before it could be acknowledged. Now ingest only records that an event still
-- needs indexing (one key in event_search_queue, written by a trigger in the same transaction), and
-- a background indexer fills event_search in batches. Search stays complete while it catches up:
-- queued events are matched on the fly (src/store/list-query.ts).

CREATE TABLE event_search (
  event_id uuid PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
  payload_json jsonb,
  payload_tsv tsvector
);

-- No foreign key here on purpose: it would add a trigger to every ingest insert. An entry whose
-- event retention has already deleted is simply dropped by the indexer.
CREATE TABLE event_search_queue (
  event_id uuid PRIMARY KEY
);

-- Every writer enqueues, whatever its SQL (ingest, queue sources, a bulk import): a statement-level
-- trigger costs one call per INSERT statement, not one per row, so a group-committed batch pays
-- for it once.
CREATE FUNCTION switchboard_enqueue_search() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  INSERT INTO event_search_queue (event_id) SELECT id FROM new_events ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;

CREATE TRIGGER events_enqueue_search
  AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION switchboard_enqueue_search();

-- The helpers trap errors with an EXCEPTION block, which starts a subtransaction, and PostgreSQL
-- cannot start one during a parallel query. As generated columns they never ran in one; as part of
-- a search over queued events they can.
ALTER FUNCTION switchboard_payload_jsonb(bytea) PARALLEL UNSAFE;
ALTER FUNCTION switchboard_payload_tsvector(bytea) PARALLEL UNSAFE;

-- Events stored before this migration keep the values already computed for them.
INSERT INTO event_search (event_id, payload_json, payload_tsv)
SELECT id, payload_json, payload_tsv FROM events;

DROP INDEX events_payload_tsv_idx;
DROP INDEX events_payload_json_idx;
ALTER TABLE events DROP COLUMN payload_tsv;
ALTER TABLE events DROP COLUMN payload_json;

CREATE INDEX event_search_tsv_idx ON event_search USING gin (payload_tsv);
CREATE INDEX event_search_json_idx ON event_search USING gin (payload_json jsonb_path_ops);
