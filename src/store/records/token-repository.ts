/**
 * Bearer tokens for MCP and the HTTP API. A token is 32 random bytes shown once at creation; only
 * its sha-256 is stored, so a copy of the database does not hand out working tokens.
 *
 * Lookup is by hash through a unique index rather than a constant-time comparison: the timing of
 * the index search can only reveal how a guess's *hash* relates to stored hashes, and learning a
 * hash prefix does not help find a token that produces it (sha-256 is preimage resistant). With
 * 256 bits of entropy per token there is also nothing to gain from a salt or a slow hash.
 */
import { createHash, randomBytes } from 'node:crypto';
import { sql, type DatabasePool, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { invalidArgument, notFound } from '../../errors/app-error.ts';
import { assertStorePool } from '../database/database.ts';
import { utcColumn, utcText } from '../sql/timestamps.ts';

export interface ApiToken {
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

interface CreatedToken {
  name: string;
  /** The plaintext token. It is not stored and cannot be shown again. */
  token: string;
}

export interface TokenRepository {
  /** Fails with invalid_argument when an active token already has this name; a revoked name is reused. */
  create(name: string): Promise<CreatedToken>;
  list(): Promise<ApiToken[]>;
  /** True when revoked now, false when it already was; not_found for an unknown name. */
  revoke(name: string): Promise<boolean>;
  /** The active token with this plaintext, or null. Records when it was last used. */
  findByToken(token: string): Promise<ApiToken | null>;
  /** Active tokens. */
  count(): Promise<number>;
  /** Which of these token hashes (sha-256) still belong to an active token: one query for all of them. */
  activeHashes(hashes: readonly Buffer[]): Promise<Buffer[]>;
}

/** @internal outside src/, only tests or benches use it */
export const TOKEN_PREFIX = 'sbt_';
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** last_used_at is advisory; writing it at most once a minute keeps authentication read-mostly. */
const LAST_USED_RESOLUTION_SECONDS = 60;

const tokenRow = z.object({
  name: z.string(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
});

const utc = (column: string): FragmentSqlToken => utcColumn('api_tokens', column);

const TOKEN_COLUMNS = sql.fragment`api_tokens.name, ${utc('created_at')} AS created_at,
  ${utc('last_used_at')} AS last_used_at, ${utc('revoked_at')} AS revoked_at`;

const toApiToken = (row: z.infer<typeof tokenRow>): ApiToken => ({
  name: row.name,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
});

const hashToken = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

// A repository: one closure over the pool whose methods are each one statement.
export function createTokenRepository(pool: DatabasePool): TokenRepository {
  assertStorePool(pool);

  const checkName = (name: string): void => {
    if (typeof name !== 'string' || !NAME.test(name)) {
      throw invalidArgument(
        'token name must be 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit',
      );
    }
  };

  return {
    async create(name) {
      checkName(name);
      const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
      const created = await pool.maybeOne(sql.type(z.object({ name: z.string() }))`
        INSERT INTO api_tokens (name, token_hash) VALUES (${name}, ${sql.binary(hashToken(token))})
        ON CONFLICT (name) DO UPDATE
          SET token_hash = EXCLUDED.token_hash, created_at = now(), last_used_at = NULL, revoked_at = NULL
          WHERE api_tokens.revoked_at IS NOT NULL
        RETURNING api_tokens.name
      `);
      if (!created) throw invalidArgument(`a token named ${name} already exists; revoke it first`);
      return { name, token };
    },

    async list() {
      const rows = await pool.any(sql.type(tokenRow)`
        SELECT ${TOKEN_COLUMNS} FROM api_tokens ORDER BY api_tokens.created_at, api_tokens.name
      `);
      return rows.map(toApiToken);
    },

    async revoke(name) {
      checkName(name);
      const row = await pool.maybeOne(sql.type(z.object({ revoked_now: z.boolean() }))`
        WITH target AS (SELECT name, revoked_at FROM api_tokens WHERE name = ${name} FOR UPDATE),
        revoked AS (
          UPDATE api_tokens SET revoked_at = now()
          FROM target WHERE api_tokens.name = target.name AND target.revoked_at IS NULL
          RETURNING api_tokens.name
        )
        SELECT EXISTS (SELECT 1 FROM revoked) AS revoked_now FROM target
      `);
      if (!row) throw notFound(`no token named ${name}`);
      return row.revoked_now;
    },

    async findByToken(token) {
      if (typeof token !== 'string' || !token.startsWith(TOKEN_PREFIX) || token.length > 200) return null;
      const row = await pool.maybeOne(sql.type(tokenRow)`
        WITH hit AS (
          SELECT api_tokens.name FROM api_tokens
          WHERE api_tokens.token_hash = ${sql.binary(hashToken(token))} AND api_tokens.revoked_at IS NULL
        ),
        touched AS (
          UPDATE api_tokens SET last_used_at = now()
          FROM hit
          WHERE api_tokens.name = hit.name
            AND (api_tokens.last_used_at IS NULL
              OR api_tokens.last_used_at < now() - make_interval(secs => ${LAST_USED_RESOLUTION_SECONDS}))
          RETURNING api_tokens.name, api_tokens.last_used_at
        )
        SELECT api_tokens.name, ${utc('created_at')} AS created_at,
          ${utcText(sql.fragment`COALESCE(touched.last_used_at, api_tokens.last_used_at)`)} AS last_used_at,
          ${utc('revoked_at')} AS revoked_at
        FROM api_tokens JOIN hit ON hit.name = api_tokens.name
        -- The outer select cannot see the CTE's update; take the time it just wrote from RETURNING.
        LEFT JOIN touched ON touched.name = api_tokens.name
      `);
      return row ? toApiToken(row) : null;
    },

    async activeHashes(hashes) {
      if (hashes.length === 0) return [];
      const rows = await pool.anyFirst(sql.type(z.object({ token_hash: z.instanceof(Buffer) }))`
        SELECT api_tokens.token_hash FROM api_tokens
        WHERE api_tokens.revoked_at IS NULL AND api_tokens.token_hash IN (
          SELECT decode(hex, 'hex') FROM unnest(${sql.array(
            hashes.map((hash) => hash.toString('hex')),
            'text',
          )}) AS hex
        )
      `);
      return [...rows];
    },

    async count() {
      return pool.oneFirst(sql.type(z.object({ count: z.number().int() }))`
        SELECT count(*)::int AS count FROM api_tokens WHERE revoked_at IS NULL
      `);
    },
  };
}
