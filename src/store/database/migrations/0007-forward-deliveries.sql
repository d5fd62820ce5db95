-- Forwarding's transactional outbox: one row per (event, forward rule), written in the same
-- statement as the event, so a committed event always has its deliveries queued. Every attempt is
-- kept beside it. Retention deletes events; their deliveries and attempts go with them.

CREATE TABLE deliveries (
  -- The X-Switchboard-Delivery header: the same on every retry, so consumers dedupe on it.
  id uuid PRIMARY KEY,
  event_id uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  rule text NOT NULL,
  -- Received order within a rule (ordered mode sends in it).
  seq bigint GENERATED ALWAYS AS IDENTITY,
  state text NOT NULL DEFAULT 'pending'
    CONSTRAINT deliveries_state_check CHECK (state IN ('pending', 'delivering', 'delivered', 'failed', 'dead')),
  -- Attempts started; the next is sent with X-Switchboard-Attempt: attempt_count + 1.
  attempt_count integer NOT NULL DEFAULT 0 CONSTRAINT deliveries_attempts_nonnegative CHECK (attempt_count >= 0),
  -- attempt_count when a manual retry last gave the delivery a fresh max_attempts.
  budget_start integer NOT NULL DEFAULT 0,
  -- pending, failed: when the next attempt is due; delivering: when the claim expires (the
  -- instance holding it died), after which any instance claims it again. NULL once settled.
  next_attempt_at timestamptz DEFAULT clock_timestamp(),
  -- Which claim holds it while delivering: a claim that expired cannot settle the row any more.
  claim uuid,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  delivered_at timestamptz,
  CONSTRAINT deliveries_event_rule_key UNIQUE (event_id, rule)
);

-- The dispatcher's claim: the open deliveries of one rule in received order.
CREATE INDEX deliveries_open_idx ON deliveries (rule, seq) WHERE state IN ('pending', 'delivering', 'failed');
-- GET /api/forwards: dead counts and delivered in the last hour, per rule.
CREATE INDEX deliveries_rule_state_idx ON deliveries (rule, state, delivered_at);

CREATE TABLE delivery_attempts (
  delivery_id uuid NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
  attempt integer NOT NULL CONSTRAINT delivery_attempts_attempt_positive CHECK (attempt >= 1),
  rule text NOT NULL,
  started_at timestamptz NOT NULL,
  response_status integer CONSTRAINT delivery_attempts_status_range CHECK (response_status BETWEEN 100 AND 599),
  response_ms double precision CONSTRAINT delivery_attempts_ms_nonnegative CHECK (response_ms >= 0),
  error text,
  response_excerpt text,
  response_content_type text,
  PRIMARY KEY (delivery_id, attempt)
);

-- The rule's latest failed attempt, for GET /api/forwards.
CREATE INDEX delivery_attempts_rule_failed_idx ON delivery_attempts (rule, started_at DESC) WHERE error IS NOT NULL;

-- Pause is kept here, not in memory: every instance and a restart see it.
CREATE TABLE forward_rule_state (
  rule text PRIMARY KEY,
  paused boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
