-- What a person scanning the list, or looking at one event, needs without opening the payload.
--
-- summary: one line taken from the payload at ingest (GitHub's repository and ref, Stripe's
-- object and amount, …), so three "push" rows can be told apart. Computed from the JSON parse
-- ingest already does to identify the event; NULL when the body is not JSON or says nothing
-- useful, and for rows stored before this migration.
ALTER TABLE events ADD COLUMN summary text;

-- The original request as the sender made it, and what switchboard answered it: the method, the
-- path, the query string (values of parameters whose names look like secrets are replaced before
-- they get here: secrets never reach the database) and the HTTP status sent back (200 when
-- stored, 401 when the signature or token check failed, 503 when the commit was confirmed only
-- after the sender had been told to retry). All NULL for queue messages and older rows.
ALTER TABLE events ADD COLUMN request_method text;
ALTER TABLE events ADD COLUMN request_path text;
ALTER TABLE events ADD COLUMN request_query text;
ALTER TABLE events ADD COLUMN response_status smallint;

-- Existing rows have NULL in every new column, which satisfies each check, so validating them
-- (a scan of a possibly large table) is skipped; new rows are checked.
ALTER TABLE events ADD CONSTRAINT events_summary_length CHECK (char_length(summary) BETWEEN 1 AND 120) NOT VALID;
ALTER TABLE events ADD CONSTRAINT events_request_complete CHECK (
  (request_method IS NULL) = (request_path IS NULL)
  AND (request_method IS NULL) = (request_query IS NULL)
  AND (request_method IS NULL) = (response_status IS NULL)
) NOT VALID;
ALTER TABLE events ADD CONSTRAINT events_request_lengths CHECK (
  char_length(request_method) <= 16 AND char_length(request_path) <= 2048 AND char_length(request_query) <= 2048
) NOT VALID;
ALTER TABLE events ADD CONSTRAINT events_response_status_range CHECK (response_status BETWEEN 100 AND 599) NOT VALID;

-- Why a replay attempt did not deliver, in the terms a person acts on (the target is not allowed,
-- nothing answered on the port, …): error_code alone says only "invalid_argument". NULL for
-- delivered attempts and for rows written before this migration.
ALTER TABLE replay_attempts ADD COLUMN error_reason text;
ALTER TABLE replay_attempts ADD CONSTRAINT replay_attempts_error_reason_check CHECK (
  error_reason IN (
    'failed_check', 'bad_target', 'target_not_allowed', 'could_not_resolve', 'could_not_connect', 'no_answer',
    'rate_limited', 'internal'
  )
) NOT VALID;
