-- Deliveries of a forward rule that is no longer configured are cancelled at start-up, with the
-- reason, instead of staying pending forever (and going to whatever target a later rule of the
-- same name points at). Cancelled is final: a manual retry does not revive it.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_state_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_state_check
  CHECK (state IN ('pending', 'delivering', 'delivered', 'failed', 'dead', 'cancelled'));
ALTER TABLE deliveries ADD COLUMN cancel_reason text;
