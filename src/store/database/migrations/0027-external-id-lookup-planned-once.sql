-- The dedupe lookup keeps one plan per session again, an index probe whatever the partitions'
-- statistics say (docs/adr/ingest-minimum-work.md, decision 6).
--
-- Migration 0022 planned switchboard_external_ids_stored afresh on every call, so that a partition
-- that was empty when a session first planned it was not read through once it had grown. That
-- planning cost about 300 µs of backend CPU per call (400 µs a call against 100 µs with a kept
-- plan, one key, bench figures in the ADR), paid by every batch insert: a third of what a 1-event
-- insert costs PostgreSQL, and a paced load sends batches of a few events.
--
-- A kept (generic) plan is safe when it cannot choose a sequential scan: with enable_seqscan off,
-- each key partition is probed by its unique (provider, external_id) index however small the
-- planner believes it to be, and the partitions outside the dedupe window are still pruned as each
-- call starts (`at` is a parameter). The event_partitions check has no index its condition can use,
-- so it keeps its sequential scan, with a cost the planner now counts as "disabled" (about 1e10):
-- that cost crossed jit_above_cost, and every call compiled the statement with JIT, 25–30 ms a
-- call, which is what sank the first version of 0022. JIT is therefore off for the function: its
-- statements read a few index pages and never gain from it.
ALTER FUNCTION switchboard_external_ids_stored(text[], text[], timestamptz)
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION switchboard_external_ids_stored(text[], text[], timestamptz)
  SET enable_seqscan = off;
ALTER FUNCTION switchboard_external_ids_stored(text[], text[], timestamptz)
  SET jit = off;
