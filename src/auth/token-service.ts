import { createHash, timingSafeEqual } from 'node:crypto';
import type { Logger } from '../log/logger.ts';
import type { TokenRepository } from '../store/records/token-repository.ts';

/** Who is calling. */
export interface Caller {
  /** The token's name: rate limits, the replay audit trail and logs. */
  name: string;
  /**
   * The token's identity: the sha-256 of the token itself (base64url), as the token table stores
   * it. A token created later under the same name has another id, so what belongs to a token
   * (MCP sessions, streams) is bound to this, never to the name. Kept in memory only: never logged.
   */
  id: string;
}

export interface TokenService {
  /** The caller a presented bearer token belongs to, or null when it is not a valid token. */
  authenticate(token: string): Promise<Caller | null>;
  /**
   * Calls onRevoked once when the caller's token is revoked, which is checked every recheckMs for
   * as long as something watches it; returns the function that stops watching. Long-lived
   * connections (SSE streams, MCP sessions) use it to end when their token does.
   */
  watch(caller: Caller, onRevoked: () => void): () => void;
  /** Stops the revocation checks. */
  close(): void;
}

/** The identity of SWITCHBOARD_TOKEN. */
export const ENV_TOKEN_CALLER = 'env';

/**
 * How long a managed token, once found valid, is trusted without asking the database again.
 * @internal outside src/, only tests or benches use it
 */
export const DEFAULT_TOKEN_CACHE_TTL_MS = 5_000;
/**
 * How often watched tokens are checked for revocation: a stream or session ends at most this long
 * (plus one query) after `switchboard token revoke`. One query per interval covers every watched
 * token, whatever the number of connections.
 */
const DEFAULT_TOKEN_RECHECK_MS = 2_000;
const MAX_CACHED_TOKENS = 1_000;

export interface TokenServiceOptions {
  tokens: Pick<TokenRepository, 'findByToken' | 'activeHashes'>;
  /** SWITCHBOARD_TOKEN; empty or undefined means none. */
  envToken?: string | undefined;
  /**
   * Default 5 s; 0 asks the database on every request. This bounds how long a revoked token keeps
   * working in a running server (revocation usually comes from another process, the CLI).
   */
  cacheTtlMs?: number;
  /** Default 2 s. */
  recheckMs?: number;
  /** Told when a revocation check could not reach the database. */
  logger?: Logger;
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
 * Over 80 lines: one closure over the token cache and its recheck timers that lookup, revocation
 * watch and close share.
 */
export function createTokenService(options: TokenServiceOptions): TokenService {
  const envDigest = options.envToken ? digest(options.envToken) : undefined;
  const envId = envDigest?.toString('base64url');
  const ttlMs = options.cacheTtlMs ?? DEFAULT_TOKEN_CACHE_TTL_MS;
  const now = options.now ?? (() => performance.now());
  const cache = new Map<string, { caller: Caller; expiresAt: number }>();
  /** Watched token ids and who to tell when each is revoked. */
  const watchers = new Map<string, Set<() => void>>();
  let timer: NodeJS.Timeout | undefined;
  let checking = false;

  const recheck = async (): Promise<void> => {
    if (checking) return;
    const ids = [...watchers.keys()];
    if (ids.length === 0) return;
    checking = true;
    try {
      const active = await options.tokens.activeHashes(ids.map((id) => Buffer.from(id, 'base64url')));
      const still = new Set(active.map((hash) => hash.toString('base64url')));
      for (const id of ids) {
        if (still.has(id)) continue;
        cache.delete(id);
        const listeners = watchers.get(id);
        watchers.delete(id);
        for (const onRevoked of listeners ?? []) onRevoked();
      }
    } catch (err) {
      // While the database is down no token can be revoked either; the next check catches up.
      options.logger?.warn({ err }, 'could not check watched tokens for revocation');
    } finally {
      checking = false;
      if (watchers.size === 0) stopTimer();
    }
  };

  const stopTimer = (): void => {
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
  };

  return {
    async authenticate(token) {
      if (token === '') return null;
      const presented = digest(token);
      if (envDigest !== undefined && envId !== undefined && timingSafeEqual(presented, envDigest)) {
        return { name: ENV_TOKEN_CALLER, id: envId };
      }
      const key = presented.toString('base64url');
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
      const caller: Caller = { name: found.name, id: key };
      if (ttlMs > 0) {
        cache.set(key, { caller, expiresAt: now() + ttlMs });
        if (cache.size > MAX_CACHED_TOKENS) {
          const oldest = cache.keys().next();
          if (oldest.done !== true) cache.delete(oldest.value);
        }
      }
      return { ...caller };
    },

    watch(caller, onRevoked) {
      // SWITCHBOARD_TOKEN lives in the environment: it cannot be revoked while the process runs.
      if (caller.id === envId) return () => undefined;
      let listeners = watchers.get(caller.id);
      if (listeners === undefined) {
        listeners = new Set();
        watchers.set(caller.id, listeners);
      }
      // Each watch gets its own function, so one connection stopping never stops another's.
      const listener = (): void => onRevoked();
      listeners.add(listener);
      if (timer === undefined) {
        timer = setInterval(() => void recheck(), options.recheckMs ?? DEFAULT_TOKEN_RECHECK_MS);
        timer.unref();
      }
      return () => {
        const current = watchers.get(caller.id);
        current?.delete(listener);
        if (current?.size === 0) watchers.delete(caller.id);
        if (watchers.size === 0) stopTimer();
      };
    },

    close() {
      watchers.clear();
      stopTimer();
    },
  };
}
