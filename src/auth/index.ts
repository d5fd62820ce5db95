/** Authentication, DNS-rebinding protection and rate limits, shared by /mcp and /api. */
export {
  requireBearer,
  callerFrom,
  callerOf,
  bearerToken,
  watchCaller,
  WWW_AUTHENTICATE,
  BEARER_HINT,
  type RequireBearerOptions,
} from './require-bearer.ts';
export {
  createTokenService,
  DEFAULT_TOKEN_CACHE_TTL_MS,
  DEFAULT_TOKEN_RECHECK_MS,
  ENV_TOKEN_CALLER,
  type Caller,
  type TokenService,
  type TokenServiceOptions,
} from './token-service.ts';
export {
  createHostCheck,
  createHostMatcher,
  checkHostAndOrigin,
  parseAuthority,
  type HostCheckOptions,
  type HostMatcher,
} from './host-check.ts';
export {
  createKeyedRateLimiter,
  createRateLimiter,
  DEFAULT_MAX_BUCKETS,
  type KeyedRateLimiter,
  type RateClass,
  type RateDecision,
  type RateLimiter,
  type RateLimiterOptions,
} from './rate-limiter.ts';
export {
  ensureInitialToken,
  INITIAL_TOKEN_NAME,
  TOKEN_FILE_NAME,
  type EnsureInitialTokenOptions,
  type InitialTokenResult,
} from './ensure-initial-token.ts';
export { runTokenCommand, createToken, formatTokenList, TOKEN_USAGE, type TokenCommandIo } from './token-commands.ts';
