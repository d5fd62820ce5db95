-- Events: the exact bytes of every delivery plus what was learned about it on arrival.

DO $$
BEGIN
  -- Payload search decodes bytes as UTF-8 and jsonb needs full Unicode; another server encoding
  -- would silently index garbage.
  IF current_setting('server_encoding') <> 'UTF8' THEN
    RAISE EXCEPTION 'switchboard needs a UTF8 database; this one is %', current_setting('server_encoding');
  END IF;
END
$$;

-- The search columns below are derived in the database so that every writer (ingest, the bulk
-- seed of the benchmark, a future import) fills them without code of its own. Each helper turns a
-- payload that is not valid UTF-8 text (or not JSON) into NULL instead of failing the insert:
-- one odd body must never sink the whole group-committed batch it arrived in.

CREATE FUNCTION switchboard_payload_jsonb(payload bytea) RETURNS jsonb
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
  RETURN convert_from(payload, 'UTF8')::jsonb;
EXCEPTION WHEN others THEN
  -- Invalid UTF-8, NUL bytes, text that is not JSON, or JSON that jsonb refuses (\u0000, lone
  -- surrogates, numbers out of range, nesting too deep).
  RETURN NULL;
END
$$;

CREATE FUNCTION switchboard_payload_tsvector(payload bytea) RETURNS tsvector
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
  -- Only the first 100,000 characters are indexed: a tsvector is capped at 1 MB, and a 5 MiB body
  -- should not make ingest pay for indexing all of it. The simple configuration (no stemming, no
  -- stop words) suits payloads, which are mostly identifiers, names and codes.
  RETURN to_tsvector('simple'::regconfig, left(convert_from(payload, 'UTF8'), 100000));
EXCEPTION WHEN others THEN
  RETURN NULL;
END
$$;

CREATE TABLE events (
  id uuid PRIMARY KEY,
  provider text NOT NULL CONSTRAINT events_provider_length CHECK (char_length(provider) BETWEEN 1 AND 64),
  event_type text NOT NULL CONSTRAINT events_event_type_length CHECK (char_length(event_type) <= 200),
  -- The part before the first dot. A dotless event_type filter matches the type itself and its
  -- dotted sub-types, which is exactly "event_family = value"; indexing it keeps that filter an
  -- ordered range scan instead of two ranges that would need a sort.
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
  payload_json jsonb GENERATED ALWAYS AS (switchboard_payload_jsonb(payload)) STORED,
  payload_tsv tsvector GENERATED ALWAYS AS (switchboard_payload_tsvector(payload)) STORED,
  received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- The contract promises verified is true only for a signed event whose signature checked out.
  CONSTRAINT events_verified_only_signed CHECK (NOT verified OR trust_mode = 'signed')
);

-- A provider's retry of a delivery it already made is stored once.
CREATE UNIQUE INDEX events_provider_external_id_key ON events (provider, external_id) WHERE external_id IS NOT NULL;

-- One index per filter combination of list_webhook_events, each ending in the sort key, so every
-- page (first or thousandth) is a bounded index range scan with no sort.
CREATE INDEX events_received_idx ON events (received_at DESC, id DESC);
CREATE INDEX events_provider_received_idx ON events (provider, received_at DESC, id DESC);
CREATE INDEX events_type_received_idx ON events (event_type, received_at DESC, id DESC);
CREATE INDEX events_family_received_idx ON events (event_family, received_at DESC, id DESC);
CREATE INDEX events_provider_type_received_idx ON events (provider, event_type, received_at DESC, id DESC);
CREATE INDEX events_provider_family_received_idx ON events (provider, event_family, received_at DESC, id DESC);

-- Search for the HTTP API: full text over the payload and JSON containment.
CREATE INDEX events_payload_tsv_idx ON events USING gin (payload_tsv);
CREATE INDEX events_payload_json_idx ON events USING gin (payload_json jsonb_path_ops);
