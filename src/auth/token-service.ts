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
 */
export class TokenService {
  readonly #options: TokenServiceOptions;
  readonly #envDigest: Buffer | undefined;
  readonly #envId: string | undefined;
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** Valid managed tokens by digest, least recently used first. */
  readonly #cache = new Map<string, { caller: Caller; expiresAt: number }>();
  /** Watched token ids and who to tell when each is revoked. */
  readonly #watchers = new Map<string, Set<() => void>>();
  #timer: NodeJS.Timeout | undefined;
  #checking = false;

  constructor(options: TokenServiceOptions) {
    this.#options = options;
    this.#envDigest = options.envToken ? digest(options.envToken) : undefined;
    this.#envId = this.#envDigest?.toString('base64url');
    this.#ttlMs = options.cacheTtlMs ?? DEFAULT_TOKEN_CACHE_TTL_MS;
    this.#now = options.now ?? (() => performance.now());
  }

  /** The caller a presented bearer token belongs to, or null when it is not a valid token. */
  async authenticate(token: string): Promise<Caller | null> {
    if (token === '') return null;
    const presented = digest(token);
    if (this.#envDigest !== undefined && this.#envId !== undefined && timingSafeEqual(presented, this.#envDigest)) {
      return { name: ENV_TOKEN_CALLER, id: this.#envId };
    }
    const key = presented.toString('base64url');
    const cached = this.#cached(key);
    if (cached !== undefined) return { ...cached };
    const found = await this.#options.tokens.findByToken(token);
    if (found === null) return null;
    const caller: Caller = { name: found.name, id: key };
    this.#remember(key, caller);
    return { ...caller };
  }

  /**
   * Calls onRevoked once when the caller's token is revoked, which is checked every recheckMs for
   * as long as something watches it; returns the function that stops watching. Long-lived
   * connections (SSE streams, MCP sessions) use it to end when their token does.
   */
  watch(caller: Caller, onRevoked: () => void): () => void {
    // SWITCHBOARD_TOKEN lives in the environment: it cannot be revoked while the process runs.
    if (caller.id === this.#envId) return () => undefined;
    let listeners = this.#watchers.get(caller.id);
    if (listeners === undefined) {
      listeners = new Set();
      this.#watchers.set(caller.id, listeners);
    }
    // Each watch gets its own function, so one connection stopping never stops another's.
    const listener = (): void => onRevoked();
    listeners.add(listener);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => void this.#recheck(), this.#options.recheckMs ?? DEFAULT_TOKEN_RECHECK_MS);
      this.#timer.unref();
    }
    return () => {
      const current = this.#watchers.get(caller.id);
      current?.delete(listener);
      if (current?.size === 0) this.#watchers.delete(caller.id);
      if (this.#watchers.size === 0) this.#stopTimer();
    };
  }

  /** Stops the revocation checks. */
  close(): void {
    this.#watchers.clear();
    this.#stopTimer();
  }

  /** A cached caller still within its time, moved to the recently used end. */
  #cached(key: string): Caller | undefined {
    const cached = this.#cache.get(key);
    if (cached === undefined) return undefined;
    this.#cache.delete(key);
    if (cached.expiresAt <= this.#now()) return undefined;
    this.#cache.set(key, cached);
    return cached.caller;
  }

  #remember(key: string, caller: Caller): void {
    if (this.#ttlMs <= 0) return;
    this.#cache.set(key, { caller, expiresAt: this.#now() + this.#ttlMs });
    if (this.#cache.size > MAX_CACHED_TOKENS) {
      const oldest = this.#cache.keys().next();
      if (oldest.done !== true) this.#cache.delete(oldest.value);
    }
  }

  async #recheck(): Promise<void> {
    if (this.#checking) return;
    const ids = [...this.#watchers.keys()];
    if (ids.length === 0) return;
    this.#checking = true;
    try {
      const active = await this.#options.tokens.activeHashes(ids.map((id) => Buffer.from(id, 'base64url')));
      const still = new Set(active.map((hash) => hash.toString('base64url')));
      for (const id of ids) if (!still.has(id)) this.#revoked(id);
    } catch (err) {
      // While the database is down no token can be revoked either; the next check catches up.
      this.#options.logger?.warn({ err }, 'could not check watched tokens for revocation');
    } finally {
      this.#checking = false;
      if (this.#watchers.size === 0) this.#stopTimer();
    }
  }

  #revoked(id: string): void {
    this.#cache.delete(id);
    const listeners = this.#watchers.get(id);
    this.#watchers.delete(id);
    for (const onRevoked of listeners ?? []) onRevoked();
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
