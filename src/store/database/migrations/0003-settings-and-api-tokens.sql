-- Small key/value settings the server keeps for itself.
CREATE TABLE settings (
  key text PRIMARY KEY,
  value jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Bearer tokens for MCP and the HTTP API. Only the sha-256 of a token is stored; the token itself
-- is shown once, when it is created.
CREATE TABLE api_tokens (
  name text PRIMARY KEY CONSTRAINT api_tokens_name_length CHECK (char_length(name) BETWEEN 1 AND 64),
  token_hash bytea NOT NULL CONSTRAINT api_tokens_token_hash_key UNIQUE
    CONSTRAINT api_tokens_token_hash_length CHECK (octet_length(token_hash) = 32),
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
