-- What the consumer answered, kept with each replay attempt: a status alone ("500") gives a person
-- or an agent nothing to fix. The excerpt is the first 2 KiB of the answer as text (NULL when it
-- was empty or not UTF-8), and the content type says how to read it.
ALTER TABLE replay_attempts ADD COLUMN response_excerpt text;
ALTER TABLE replay_attempts ADD COLUMN response_content_type text;
