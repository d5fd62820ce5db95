import type { ReadResourceResult, Resource } from '@modelcontextprotocol/sdk/types.js';
import { RECENT_EVENTS_LIMITS } from '../../generated/constants.ts';
import type { RecentEventsResource } from '../../generated/types.ts';
import { validateRecentEventsResource } from '../../generated/validators.js';
import { AppError, internalError, notFound } from '../errors/app-error.ts';
import { describeSchemaErrors } from '../errors/schema-errors.ts';
import type { Logger } from '../log/logger.ts';
import type { EventStore } from '../store/events/event-store.ts';
import { toMcpEventSummary } from './event-summaries.ts';
import { unexpectedFailure } from './switchboard-tools.ts';
import { JsonRpcFailure, resourceError } from './tool-results.ts';

export const RECENT_EVENTS_URI = 'switchboard://events/recent';
const RECENT_EVENTS_LIMIT = RECENT_EVENTS_LIMITS.maxItems;

export const RECENT_EVENTS_LISTING: Resource = {
  uri: RECENT_EVENTS_URI,
  name: 'recent-events',
  title: 'Recent events',
  description: `The ${RECENT_EVENTS_LIMIT} newest events, newest first, as summaries (same shape as list_webhook_events). Subscribe for updates.`,
  mimeType: 'application/json',
};

export interface RecentEventsDeps {
  store: Pick<EventStore, 'listWithSummaries'>;
  checkReadLimit: (caller: string) => void;
  logger: Logger;
}

export function assertKnownResource(uri: string): void {
  if (uri !== RECENT_EVENTS_URI) {
    throw resourceError(notFound(`resource not found: ${uri.slice(0, 200)}; the one resource is ${RECENT_EVENTS_URI}`));
  }
}

/** Reads the resource. Failures are JSON-RPC errors whose data is the error envelope (resourceError). */
export async function readRecentEvents(
  deps: RecentEventsDeps,
  uri: string,
  caller: string,
): Promise<ReadResourceResult> {
  assertKnownResource(uri);
  try {
    deps.checkReadLimit(caller);
    const page = await deps.store.listWithSummaries({ limit: RECENT_EVENTS_LIMIT });
    const body: RecentEventsResource = { events: page.events.map(toMcpEventSummary) };
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
      throw resourceError(error);
    }
    return { contents: [{ uri: RECENT_EVENTS_URI, mimeType: 'application/json', text: JSON.stringify(body) }] };
  } catch (err) {
    if (err instanceof JsonRpcFailure) throw err;
    if (err instanceof AppError && err.code === 'rate_limited') throw resourceError(err);
    throw resourceError(unexpectedFailure(deps.logger, err, { uri, caller }, 'MCP resource read failed'));
  }
}
