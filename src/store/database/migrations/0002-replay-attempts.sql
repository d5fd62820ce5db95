-- Every replay attempt, refused and failed ones included: the audit trail of what was re-sent where.

CREATE TABLE replay_attempts (
  id uuid PRIMARY KEY,
  -- Retention deletes events; their replay history goes with them.
  event_id uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  caller text NOT NULL,
  target_url text,
  resolved_ip text,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  delivered boolean NOT NULL,
  response_status integer CONSTRAINT replay_attempts_status_range CHECK (response_status BETWEEN 100 AND 999),
  response_ms double precision CONSTRAINT replay_attempts_ms_nonnegative CHECK (response_ms >= 0),
  error_code text CONSTRAINT replay_attempts_error_code_check
    CHECK (error_code IN ('not_found', 'invalid_argument', 'replay_failed', 'rate_limited', 'internal'))
);

-- Serves both the newest-first history of one event and the cascade from events.
CREATE INDEX replay_attempts_event_idx ON replay_attempts (event_id, started_at DESC, id DESC);
