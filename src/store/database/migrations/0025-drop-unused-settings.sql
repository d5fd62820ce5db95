-- The key/value settings table made in 0003 was never read or written: the server keeps its
-- settings in the config file, and its own state in tables of their own (api_tokens, the outbox,
-- the partitions' bookkeeping). An empty table nobody uses only misleads the next reader.
-- IF EXISTS: a database some operator cleaned by hand still migrates.
DROP TABLE IF EXISTS settings;
