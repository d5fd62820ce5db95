import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ErrorEnvelope } from '../../generated/types.ts';
import type { AppError } from '../errors/app-error.ts';

export function errorEnvelope(error: AppError): ErrorEnvelope {
  return {
    error: {
      code: error.code,
      message: error.message,
      ...(error.code === 'rate_limited' && error.retryAfterSeconds !== undefined
        ? { retry_after: Math.max(1, Math.ceil(error.retryAfterSeconds)) }
        : {}),
    },
  };
}

/** The structured result and the same JSON as text, for clients that only read text. */
export function toolSuccess(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}

/**
 * A tool error is a result with isError and the envelope as text only. It carries no
 * structuredContent on purpose: the official client validates any structuredContent against
 * the tool's outputSchema even when isError is set, and an envelope is not an event list.
 */
export function toolError(error: AppError): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(errorEnvelope(error)) }], isError: true };
}
