-- The answer a provider got from the app, for providers that wait for it (config: reply): how
-- the reply attempt ended (answered, timed_out, unavailable, failed), the status the app answered
-- with, and how long it took. Written once, after the provider has been answered; the event row
-- itself was committed before the app was asked, so a crash in between leaves the event stored
-- with no outcome (NULL), never an event without its row.
--
-- All NULL for events that waited for no answer, and for every event stored before this migration.
-- Adding nullable columns without a default rewrites nothing, on every partition alike.
ALTER TABLE events ADD COLUMN reply_outcome text
  CONSTRAINT events_reply_outcome_check CHECK (reply_outcome IN ('answered', 'timed_out', 'unavailable', 'failed'));
ALTER TABLE events ADD COLUMN reply_status integer
  CONSTRAINT events_reply_status_range CHECK (reply_status BETWEEN 100 AND 599);
ALTER TABLE events ADD COLUMN reply_ms double precision
  CONSTRAINT events_reply_ms_nonnegative CHECK (reply_ms >= 0);
