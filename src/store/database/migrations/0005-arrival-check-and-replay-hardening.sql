-- What the security review of replay asked the database to remember (docs/security.md).

-- Whether a signed or token delivery passed its provider's check on arrival, written by ingest.
-- Replay attaches a fresh signature or the configured token only when this is true, so a forgery
-- recorded as a rejected delivery can never be re-sent looking genuine. NULL for open and queue
-- events, which are not checked. A signed row without a value (written before this migration, or
-- by a bulk writer that leaves it out) is read as its verified flag, which for a signed event is
-- exactly that outcome. A token row without a value is read as not passed: before this migration
-- nothing but the free-text verify_detail recorded whether the token matched, and replay does not
-- guess from text.
ALTER TABLE events ADD COLUMN passed_check boolean;

-- Every existing row has passed_check NULL, which satisfies both checks, so the table scan that
-- validation would cost on a large events table is skipped; new rows are checked.
ALTER TABLE events ADD CONSTRAINT events_passed_check_only_checked
  CHECK (passed_check IS NULL OR trust_mode IN ('signed', 'token')) NOT VALID;
ALTER TABLE events ADD CONSTRAINT events_passed_check_is_verified
  CHECK (trust_mode <> 'signed' OR passed_check IS NULL OR passed_check = verified) NOT VALID;

-- A rejected delivery keeps only the first record_rejected_max_bytes of its body, since anyone who
-- can reach /hooks can send one. received_size is the length that arrived; NULL means the body was
-- stored whole (payload_size, from the stored bytes, is then the whole length too).
ALTER TABLE events ADD COLUMN received_size integer;
ALTER TABLE events ADD CONSTRAINT events_received_size_truncated
  CHECK (received_size IS NULL OR received_size > octet_length(payload)) NOT VALID;

-- A replay the caller asked to send with no signature or token (`unsigned: true`).
ALTER TABLE replay_attempts ADD COLUMN unsigned boolean NOT NULL DEFAULT false;

-- The history is readable by every token holder, and a consumer's query string may carry its
-- token: targets are now stored with the query replaced by "?…". Rows written before keep no
-- query either. Stored targets are normalised URLs (fragment dropped, a literal "?" in the path
-- percent-encoded), so the first "?" starts the query.
UPDATE replay_attempts
SET target_url = split_part(target_url, '?', 1) || '?…'
WHERE strpos(target_url, '?') > 0;
