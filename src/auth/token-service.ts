import { createHash, timingSafeEqual } from 'node:crypto';
import type { TokenRepository } from '../store/index.ts';

/** Who is calling: the token's name, used for rate limits and the replay audit trail. */
export interface Caller {
  name: string;
}

export interface TokenService {
  /** The caller a presented bearer token belongs to, or null when it is not a valid token. */
  authenticate(token: string): Promise<Caller | null>;
}

/** The identity of SWITCHBOARD_TOKEN. */
export const ENV_TOKEN_CALLER = 'env';

/** How long a managed token, once found valid, is trusted without asking the database again. */
export const DEFAULT_TOKEN_CACHE_TTL_MS = 5_000;
const MAX_CACHED_TOKENS = 1_000;

export interface TokenServiceOptions {
  tokens: Pick<TokenRepository, 'findByToken'>;
  /** SWITCHBOARD_TOKEN; empty or undefined means none. */
  envToken?: string | undefined;
  /**
   * Default 5 s; 0 asks the database on every request. This bounds how long a revoked token keeps
   * working in a running server (revocation usually comes from another process, the CLI).
   */
  cacheTtlMs?: number;
  /** Milliseconds, monotonic; injectable for tests. */
  now?: () => number;
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * The static SWITCHBOARD_TOKEN is compared through fixed-length digests so the comparison takes
 * the same time whatever the guess, its length included. Managed tokens are looked up by hash in
 * the repository (see token-repository.ts for why that needs no constant-time compare).
 *
 * Valid managed tokens are remembered briefly, keyed by their digest: every MCP message is its own
 * HTTP request, and a database round trip per message would cost an agent more than the tool call
 * it authenticates. Only successes are cached, so a stream of bad guesses cannot fill the cache,
 * and the cache is bounded (least recently used first out).
 */
export function createTokenService(options: TokenServiceOptions): TokenService {
  const envDigest = options.envToken ? digest(options.envToken) : undefined;
  const ttlMs = options.cacheTtlMs ?? DEFAULT_TOKEN_CACHE_TTL_MS;
  const now = options.now ?? (() => performance.now());
  const cache = new Map<string, { caller: Caller; expiresAt: number }>();

  return {
    async authenticate(token) {
      if (token === '') return null;
      const presented = digest(token);
      if (envDigest !== undefined && timingSafeEqual(presented, envDigest)) return { name: ENV_TOKEN_CALLER };
      const key = presented.toString('base64');
      const cached = cache.get(key);
      if (cached !== undefined) {
        cache.delete(key);
        if (cached.expiresAt > now()) {
          cache.set(key, cached);
          return { ...cached.caller };
        }
      }
      const found = await options.tokens.findByToken(token);
      if (found === null) return null;
      const caller: Caller = { name: found.name };
      if (ttlMs > 0) {
        cache.set(key, { caller, expiresAt: now() + ttlMs });
        if (cache.size > MAX_CACHED_TOKENS) {
          const oldest = cache.keys().next();
          if (oldest.done !== true) cache.delete(oldest.value);
        }
      }
      return { ...caller };
    },
  };
}
