import type { ErrorEnvelope } from '../../generated/types.ts';
import type { AppError } from './app-error.ts';

/**
 * The envelope of schemas/error-envelope.schema.json for an error. `tool` speaks the codes MCP tool
 * results are limited to (SPEC-0005); `wire` is every registered code, as HTTP sends them.
 * retry_after travels with rate_limited only, in whole seconds (Retry-After says it for the rest).
 */
export function errorEnvelope(error: AppError, codes: 'wire' | 'tool'): ErrorEnvelope {
  const code = codes === 'tool' ? error.toolCode : error.code;
  return {
    error: {
      code,
      message: error.message,
      ...(code === 'rate_limited' && error.retryAfterSeconds !== undefined
        ? { retry_after: Math.max(1, Math.ceil(error.retryAfterSeconds)) }
        : {}),
    },
  };
}
