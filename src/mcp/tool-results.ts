/** The MCP serialiser of the error registry: tool results, and the data of resource errors. */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AppError } from '../errors/app-error.ts';
import { errorEnvelope } from '../errors/error-envelope.ts';

/** JSON-RPC codes for resource failures (a resource read has no isError result to carry them). */
const RESOURCE_NOT_FOUND_CODE = -32002;
const RATE_LIMITED_CODE = -32029;
const INTERNAL_ERROR_CODE = -32603;

/** The structured result and the same JSON as text, for clients that only read text. */
export function toolSuccess(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}

/**
 * A tool error is a result with isError and the envelope as text only, in the five tool codes;
 * 'wire' keeps the error's own code, for a call ended by its session or token ending. It carries no
 * structuredContent on purpose: the official client validates any structuredContent against
 * the tool's outputSchema even when isError is set, and an envelope is not an event list.
 */
export function toolError(error: AppError, codes: 'tool' | 'wire' = 'tool'): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(errorEnvelope(error, codes)) }], isError: true };
}

/**
 * A JSON-RPC error for the SDK to send: it answers a handler's throw with the error's code,
 * message and data as they are. (The SDK's McpError writes "MCP error <code>: " into its own
 * message, which then reaches the client, whose McpError adds the prefix a second time.)
 */
export class JsonRpcFailure extends Error {
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data: unknown) {
    super(message);
    this.name = 'JsonRpcFailure';
    this.code = code;
    this.data = data;
  }
}

const RESOURCE_CODES: Partial<Record<AppError['toolCode'], number>> = {
  not_found: RESOURCE_NOT_FOUND_CODE,
  rate_limited: RATE_LIMITED_CODE,
};

/**
 * A failed resource read or subscription: a JSON-RPC error whose data is the envelope, so a
 * client tells not_found from rate_limited (with retry_after) and internal the same way it does
 * for tools.
 */
export function resourceError(error: AppError): JsonRpcFailure {
  const code = RESOURCE_CODES[error.toolCode] ?? INTERNAL_ERROR_CODE;
  return new JsonRpcFailure(code, error.message, errorEnvelope(error, 'tool'));
}
