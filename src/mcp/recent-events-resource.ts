import type { ReadResourceResult, Resource } from '@modelcontextprotocol/sdk/types.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { RECENT_EVENTS_LIMITS } from '../../generated/constants.ts';
import type { RecentEventsResource } from '../../generated/types.ts';
import { validateRecentEventsResource } from '../../generated/validators.js';
import { AppError, internalError } from '../errors/app-error.ts';
import type { Logger } from '../log/logger.ts';
import type { EventStore } from '../store/event-store.ts';
import { databaseUnavailableError, describeSchemaErrors } from './switchboard-tools.ts';
import { isDatabaseUnavailable } from '../errors/database-unavailable.ts';
import { errorEnvelope } from './tool-results.ts';

export const RECENT_EVENTS_URI = 'switchboard://events/recent';
export const RECENT_EVENTS_LIMIT = RECENT_EVENTS_LIMITS.maxItems;

/** JSON-RPC codes for resource failures (a resource read has no isError result to carry them). */
export const RESOURCE_NOT_FOUND_CODE = -32002;
export const RATE_LIMITED_CODE = -32029;
export const INTERNAL_ERROR_CODE = -32603;

export const RECENT_EVENTS_LISTING: Resource = {
  uri: RECENT_EVENTS_URI,
  name: 'recent-events',
  title: 'Recent events',
  description: `The ${RECENT_EVENTS_LIMIT} newest events, newest first, as summaries (same shape as list_webhook_events). Subscribe for updates.`,
  mimeType: 'application/json',
};

export interface RecentEventsDeps {
  store: Pick<EventStore, 'list'>;
  checkReadLimit: (caller: string) => void;
  logger: Logger;
}

export function assertKnownResource(uri: string): void {
  if (uri !== RECENT_EVENTS_URI)
    throw new McpError(RESOURCE_NOT_FOUND_CODE, 'Resource not found', { uri: uri.slice(0, 200) });
}

/**
 * Reads the resource. Failures are JSON-RPC errors whose data is the error envelope, so a client
 * can tell rate_limited (with retry_after) from internal the same way it does for tools.
 */
export async function readRecentEvents(
  deps: RecentEventsDeps,
  uri: string,
  caller: string,
): Promise<ReadResourceResult> {
  assertKnownResource(uri);
  try {
    deps.checkReadLimit(caller);
    const page = await deps.store.list({ limit: RECENT_EVENTS_LIMIT });
    const body: RecentEventsResource = { events: page.events };
    if (!validateRecentEventsResource(body)) {
      const { error, correlationId } = internalError();
      deps.logger.error(
        {
          correlationId,
          uri,
          caller,
          schemaErrors: describeSchemaErrors(validateRecentEventsResource.errors, 'resource'),
        },
        'MCP resource does not match its schema; not sent',
      );
      throw new McpError(INTERNAL_ERROR_CODE, error.message, errorEnvelope(error));
    }
    return { contents: [{ uri: RECENT_EVENTS_URI, mimeType: 'application/json', text: JSON.stringify(body) }] };
  } catch (err) {
    if (err instanceof McpError) throw err;
    if (err instanceof AppError && err.code === 'rate_limited') {
      throw new McpError(RATE_LIMITED_CODE, err.message, errorEnvelope(err));
    }
    const { error, correlationId } = internalError();
    if (isDatabaseUnavailable(err)) {
      deps.logger.warn({ err, correlationId, uri, caller }, 'MCP resource read failed: database unavailable');
      const unavailable = databaseUnavailableError(correlationId);
      throw new McpError(INTERNAL_ERROR_CODE, unavailable.message, errorEnvelope(unavailable));
    }
    deps.logger.error({ err, correlationId, uri, caller }, 'MCP resource read failed unexpectedly');
    throw new McpError(INTERNAL_ERROR_CODE, error.message, errorEnvelope(error));
  }
}
