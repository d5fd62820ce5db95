-- Signature tokens already used (issue 37.2). Mailgun signs only `timestamp + token`, not the
-- event data, so a seen signature resent with other data within the tolerance window would pass
-- its check again; a token is therefore single-use while its signature is fresh, across every
-- instance on this database. A row lives until its signature could no longer pass (its signed
-- timestamp plus the provider's tolerance); the signature-nonce job deletes it after that.
-- token and body_sha256 are SHA-256 digests (hex): of the token, and of the body it first came
-- with. The same bytes again are the same delivery (a provider's retry), not a new claim.
CREATE TABLE signature_nonces (
  provider text NOT NULL,
  token text NOT NULL,
  body_sha256 text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (provider, token)
);

CREATE INDEX signature_nonces_expires_idx ON signature_nonces (expires_at);
