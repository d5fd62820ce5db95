-- Fewer B-trees on the ingest path (docs/adr/ingest-performance.md).
--
-- Every stored event paid for eight B-tree entries: the key, the deduplication key and six list
-- indexes. The two that served an exact (dotted) event_type, alone and with a provider, are
-- dropped: such a filter also names the type's family (the part before the first dot, which is
-- what split_part gives), so the family indexes serve it as an ordered range scan that skips the
-- family's other sub-types. A dotless filter was already the family itself.
DROP INDEX IF EXISTS events_type_received_idx;
DROP INDEX IF EXISTS events_provider_type_received_idx;
