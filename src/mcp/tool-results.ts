/** The MCP serialiser of the error registry: tool results, and the data of resource errors. */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { AppError } from '../errors/app-error.ts';
import { errorEnvelope } from '../errors/error-envelope.ts';

/** JSON-RPC codes for resource failures (a resource read has no isError result to carry them). */
export const RESOURCE_NOT_FOUND_CODE = -32002;
export const RATE_LIMITED_CODE = -32029;
export const INTERNAL_ERROR_CODE = -32603;

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
  return { content: [{ type: 'text', text: JSON.stringify(errorEnvelope(error, 'tool')) }], isError: true };
}

/**
 * A failed resource read: a JSON-RPC error whose data is the envelope, so a client tells
 * rate_limited (with retry_after) from internal the same way it does for tools.
 */
export function resourceError(error: AppError): McpError {
  const code = error.toolCode === 'rate_limited' ? RATE_LIMITED_CODE : INTERNAL_ERROR_CODE;
  return new McpError(code, error.message, errorEnvelope(error, 'tool'));
}
