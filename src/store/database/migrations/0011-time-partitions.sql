-- Time partitions (docs/adr/time-partitions.md): events and everything that hangs off an event are
-- range-partitioned by the event's received_at, so retention drops a whole partition instead of
-- deleting rows, and a query bounded in time reads only the partitions of its range.
--
-- This file only renames the existing tables out of the way and creates the partitioned ones
-- empty, each with a DEFAULT partition: it runs in one short transaction whatever the size of the
-- database. Moving the rows across is done afterwards in batches, each its own transaction, with
-- progress logged and resumable after an interruption (src/store/partition-upgrade.ts), before any
-- instance serves. The dated partitions themselves are created by src/store/partitions.ts, which
-- knows store.partition (day, week or month).

-- The old tables keep their rows until the batches have moved them. Their indexes are renamed too:
-- an index name is a relation name, and the new tables take the old names.
DO $$
DECLARE
  old_table text;
  old_index record;
BEGIN
  FOREACH old_table IN ARRAY ARRAY['events', 'replay_attempts', 'deliveries', 'delivery_attempts', 'event_search'] LOOP
    EXECUTE format('ALTER TABLE %I RENAME TO %I', old_table, old_table || '_unpartitioned');
    FOR old_index IN
      SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = old_table || '_unpartitioned'
    LOOP
      EXECUTE format('ALTER INDEX %I RENAME TO %I', old_index.indexname, 'unpartitioned_' || old_index.indexname);
    END LOOP;
  END LOOP;
END
$$;

DROP TRIGGER events_enqueue_search ON events_unpartitioned;

CREATE TABLE events (
  id uuid NOT NULL,
  provider text NOT NULL CONSTRAINT events_provider_length CHECK (char_length(provider) BETWEEN 1 AND 64),
  event_type text NOT NULL CONSTRAINT events_event_type_length CHECK (char_length(event_type) <= 200),
  event_family text GENERATED ALWAYS AS (split_part(event_type, '.', 1)) STORED,
  trust_mode text NOT NULL CONSTRAINT events_trust_mode_check CHECK (trust_mode IN ('signed', 'token', 'open', 'queue')),
  verified boolean NOT NULL,
  verify_detail text NOT NULL,
  external_id text,
  content_type text,
  source_ip text,
  headers jsonb NOT NULL DEFAULT '{}'::jsonb CONSTRAINT events_headers_object CHECK (jsonb_typeof(headers) = 'object'),
  payload bytea NOT NULL,
  payload_size integer GENERATED ALWAYS AS (octet_length(payload)) STORED,
  received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  passed_check boolean,
  received_size integer,
  summary text,
  request_method text,
  request_path text,
  request_query text,
  response_status smallint,
  -- A partitioned table's unique keys must contain the partition key. Ids are UUIDv7 and unique on
  -- their own; received_at rides along so that every key lookup can name its partition.
  CONSTRAINT events_pkey PRIMARY KEY (id, received_at),
  CONSTRAINT events_verified_only_signed CHECK (NOT verified OR trust_mode = 'signed'),
  CONSTRAINT events_passed_check_only_checked CHECK (passed_check IS NULL OR trust_mode IN ('signed', 'token')),
  CONSTRAINT events_passed_check_is_verified CHECK (trust_mode <> 'signed' OR passed_check IS NULL OR passed_check = verified),
  CONSTRAINT events_received_size_truncated CHECK (received_size IS NULL OR received_size > octet_length(payload)),
  CONSTRAINT events_summary_length CHECK (char_length(summary) BETWEEN 1 AND 120),
  CONSTRAINT events_request_complete CHECK (
    (request_method IS NULL) = (request_path IS NULL)
    AND (request_method IS NULL) = (request_query IS NULL)
    AND (request_method IS NULL) = (response_status IS NULL)
  ),
  CONSTRAINT events_request_lengths CHECK (
    char_length(request_method) <= 16 AND char_length(request_path) <= 2048 AND char_length(request_query) <= 2048
  ),
  CONSTRAINT events_response_status_range CHECK (response_status BETWEEN 100 AND 599)
) PARTITION BY RANGE (received_at);

-- The list indexes of 0001 less the two 0009 dropped; on a partitioned table each partition gets its own.
CREATE INDEX events_received_idx ON events (received_at DESC, id DESC);
CREATE INDEX events_provider_received_idx ON events (provider, received_at DESC, id DESC);
CREATE INDEX events_family_received_idx ON events (event_family, received_at DESC, id DESC);
CREATE INDEX events_provider_family_received_idx ON events (provider, event_family, received_at DESC, id DESC);

-- A provider's retry is stored once, whenever it comes: a unique index on a partitioned table
-- would have to include received_at and so would only be unique within one partition. The key is
-- kept here instead, written by a trigger for every writer, and goes with its event (the foreign
-- key cascades a delete and follows a move). Retention empties a partition's keys before it drops
-- the partition.
CREATE TABLE event_external_ids (
  provider text NOT NULL,
  external_id text NOT NULL,
  event_id uuid NOT NULL,
  received_at timestamptz NOT NULL,
  CONSTRAINT event_external_ids_pkey PRIMARY KEY (provider, external_id),
  CONSTRAINT event_external_ids_event_fkey FOREIGN KEY (event_id, received_at)
    REFERENCES events (id, received_at) ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX event_external_ids_received_idx ON event_external_ids (received_at);

CREATE TABLE replay_attempts (
  id uuid NOT NULL,
  event_id uuid NOT NULL,
  event_received_at timestamptz NOT NULL,
  caller text NOT NULL,
  target_url text,
  resolved_ip text,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  delivered boolean NOT NULL,
  response_status integer CONSTRAINT replay_attempts_status_range CHECK (response_status BETWEEN 100 AND 999),
  response_ms double precision CONSTRAINT replay_attempts_ms_nonnegative CHECK (response_ms >= 0),
  error_code text CONSTRAINT replay_attempts_error_code_check
    CHECK (error_code IN ('not_found', 'invalid_argument', 'replay_failed', 'rate_limited', 'internal')),
  unsigned boolean NOT NULL DEFAULT false,
  response_excerpt text,
  response_content_type text,
  error_reason text CONSTRAINT replay_attempts_error_reason_check CHECK (
    error_reason IN (
      'failed_check', 'bad_target', 'target_not_allowed', 'could_not_resolve', 'could_not_connect', 'no_answer',
      'rate_limited', 'internal'
    )
  ),
  CONSTRAINT replay_attempts_pkey PRIMARY KEY (id, event_received_at),
  CONSTRAINT replay_attempts_event_fkey FOREIGN KEY (event_id, event_received_at)
    REFERENCES events (id, received_at) ON DELETE CASCADE ON UPDATE CASCADE
) PARTITION BY RANGE (event_received_at);
CREATE INDEX replay_attempts_event_idx ON replay_attempts (event_id, started_at DESC, id DESC);

CREATE TABLE deliveries (
  id uuid NOT NULL,
  event_id uuid NOT NULL,
  event_received_at timestamptz NOT NULL,
  rule text NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  state text NOT NULL DEFAULT 'pending'
    CONSTRAINT deliveries_state_check CHECK (state IN ('pending', 'delivering', 'delivered', 'failed', 'dead', 'cancelled')),
  attempt_count integer NOT NULL DEFAULT 0 CONSTRAINT deliveries_attempts_nonnegative CHECK (attempt_count >= 0),
  budget_start integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz DEFAULT clock_timestamp(),
  claim uuid,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  delivered_at timestamptz,
  cancel_reason text,
  CONSTRAINT deliveries_pkey PRIMARY KEY (id, event_received_at),
  CONSTRAINT deliveries_event_rule_key UNIQUE (event_id, rule, event_received_at),
  CONSTRAINT deliveries_event_fkey FOREIGN KEY (event_id, event_received_at)
    REFERENCES events (id, received_at) ON DELETE CASCADE ON UPDATE CASCADE
) PARTITION BY RANGE (event_received_at);
CREATE INDEX deliveries_open_idx ON deliveries (rule, seq) WHERE state IN ('pending', 'delivering', 'failed');
CREATE INDEX deliveries_rule_state_idx ON deliveries (rule, state, delivered_at);

-- Received order within a rule carries on from the old table's.
SELECT setval(
  pg_get_serial_sequence('deliveries', 'seq'),
  (SELECT coalesce(max(seq), 0) + 1 FROM deliveries_unpartitioned),
  false
);

CREATE TABLE delivery_attempts (
  delivery_id uuid NOT NULL,
  event_received_at timestamptz NOT NULL,
  attempt integer NOT NULL CONSTRAINT delivery_attempts_attempt_positive CHECK (attempt >= 1),
  rule text NOT NULL,
  started_at timestamptz NOT NULL,
  response_status integer CONSTRAINT delivery_attempts_status_range CHECK (response_status BETWEEN 100 AND 599),
  response_ms double precision CONSTRAINT delivery_attempts_ms_nonnegative CHECK (response_ms >= 0),
  error text,
  response_excerpt text,
  response_content_type text,
  CONSTRAINT delivery_attempts_pkey PRIMARY KEY (delivery_id, attempt, event_received_at),
  CONSTRAINT delivery_attempts_delivery_fkey FOREIGN KEY (delivery_id, event_received_at)
    REFERENCES deliveries (id, event_received_at) ON DELETE CASCADE ON UPDATE CASCADE
) PARTITION BY RANGE (event_received_at);
CREATE INDEX delivery_attempts_rule_failed_idx ON delivery_attempts (rule, started_at DESC) WHERE error IS NOT NULL;

CREATE TABLE event_search (
  event_id uuid NOT NULL,
  event_received_at timestamptz NOT NULL,
  payload_json jsonb,
  payload_tsv tsvector,
  CONSTRAINT event_search_pkey PRIMARY KEY (event_id, event_received_at),
  CONSTRAINT event_search_event_fkey FOREIGN KEY (event_id, event_received_at)
    REFERENCES events (id, received_at) ON DELETE CASCADE ON UPDATE CASCADE
) PARTITION BY RANGE (event_received_at);
CREATE INDEX event_search_tsv_idx ON event_search USING gin (payload_tsv);
CREATE INDEX event_search_json_idx ON event_search USING gin (payload_json jsonb_path_ops);

-- An event dated outside every partition (a clock far off, an import of old data) still lands.
CREATE TABLE events_default PARTITION OF events DEFAULT;
CREATE TABLE replay_attempts_default PARTITION OF replay_attempts DEFAULT;
CREATE TABLE deliveries_default PARTITION OF deliveries DEFAULT;
CREATE TABLE delivery_attempts_default PARTITION OF delivery_attempts DEFAULT;
CREATE TABLE event_search_default PARTITION OF event_search DEFAULT;

-- Every writer enqueues for search (0004) and records its external id, whatever its SQL. A
-- retry that races a concurrent first delivery fails here on the key, and the writer looks the
-- stored one up (pg-event-store.ts).
CREATE FUNCTION switchboard_record_external_ids() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
  INSERT INTO event_external_ids (provider, external_id, event_id, received_at)
  SELECT provider, external_id, id, received_at FROM new_events WHERE external_id IS NOT NULL;
  RETURN NULL;
END
$$;

CREATE TRIGGER events_enqueue_search
  AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION switchboard_enqueue_search();

CREATE TRIGGER events_record_external_ids
  AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION switchboard_record_external_ids();

-- The dated partitions, one row per range, shared by all five tables (each has a partition of the
-- same range with the same suffix).
CREATE TABLE event_partitions (
  lower_bound timestamptz PRIMARY KEY,
  upper_bound timestamptz NOT NULL,
  suffix text NOT NULL UNIQUE,
  CONSTRAINT event_partitions_range CHECK (upper_bound > lower_bound)
);

-- Creates the partitions of [lo, hi) for all five tables, or nothing when the range overlaps one
-- already made or the DEFAULT partition holds events in it (creating it would have to move them,
-- and their dependants with them; they stay where they are and retention deletes them by row).
CREATE FUNCTION switchboard_create_partition(lo timestamptz, hi timestamptz) RETURNS boolean
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
  FOREACH parent IN ARRAY ARRAY['events', 'replay_attempts', 'deliveries', 'delivery_attempts', 'event_search'] LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', parent || '_p' || suffix, parent, lo, hi);
  END LOOP;
  INSERT INTO event_partitions (lower_bound, upper_bound, suffix) VALUES (lo, hi, suffix);
  RETURN true;
END
$$;

-- Makes sure every period (a UTC day, ISO week or month) from from_at through through_at has its
-- partitions; answers how many ranges it created. A range is clipped to what earlier partitions
-- (of another unit, before store.partition changed) leave free.
CREATE FUNCTION switchboard_ensure_partitions(unit text, from_at timestamptz, through_at timestamptz) RETURNS integer
  LANGUAGE plpgsql
AS $$
DECLARE
  step interval;
  period timestamp;
  lo timestamptz;
  hi timestamptz;
  created integer := 0;
BEGIN
  IF unit NOT IN ('day', 'week', 'month') THEN
    RAISE EXCEPTION 'partition unit must be day, week or month, not %', unit;
  END IF;
  step := ('1 ' || unit)::interval;
  period := date_trunc(unit, from_at AT TIME ZONE 'UTC');
  WHILE (period AT TIME ZONE 'UTC') <= through_at LOOP
    lo := period AT TIME ZONE 'UTC';
    period := period + step;
    -- Each free stretch of the period gets a partition; taken stretches are stepped over.
    WHILE lo < (period AT TIME ZONE 'UTC') LOOP
      SELECT p.upper_bound INTO hi FROM event_partitions p WHERE p.lower_bound <= lo AND p.upper_bound > lo;
      IF FOUND THEN
        lo := hi;
        CONTINUE;
      END IF;
      SELECT least(period AT TIME ZONE 'UTC', coalesce(min(p.lower_bound), period AT TIME ZONE 'UTC')) INTO hi
        FROM event_partitions p WHERE p.lower_bound > lo;
      IF switchboard_create_partition(lo, hi) THEN
        created := created + 1;
      END IF;
      lo := hi;
    END LOOP;
  END LOOP;
  RETURN created;
END
$$;

-- The creation time a UUIDv7 carries in its first 48 bits (milliseconds since 1970), or NULL for
-- an id of another version. Id lookups bound received_at by it, so they read one or two
-- partitions instead of every partition's key index.
CREATE FUNCTION switchboard_uuid_v7_time(id uuid) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
  SELECT CASE WHEN substr(id::text, 15, 1) = '7'
    THEN to_timestamp(('x' || lpad(replace(left(id::text, 13), '-', ''), 16, '0'))::bit(64)::bigint / 1000.0)
  END
$$;
