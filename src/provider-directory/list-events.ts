import type { ApiEventList } from '../../generated/types.ts';
import { notFound } from '../errors/app-error.ts';
import type { EventStore, ListQuery } from '../store/events/event-store.ts';
import type { ProviderDirectory } from './provider-directory.ts';

export interface ListEventsDeps {
  store: Pick<EventStore, 'listWithSummaries' | 'providerHasEvents'>;
  providers: ProviderDirectory;
}

/**
 * A provider filter naming no configured provider, and none that ever stored an event, is
 * not_found with the names that do exist: an empty page would read as "nothing arrived yet" when
 * the name is a typo. A provider taken out of the configuration still lists the events it left
 * behind.
 */
async function assertKnownProvider(
  deps: { store: Pick<EventStore, 'providerHasEvents'>; providers: ProviderDirectory },
  provider: string | undefined,
): Promise<void> {
  if (provider === undefined) return;
  const names = deps.providers.list().map((p) => p.name);
  if (!names.includes(provider) && !(await deps.store.providerHasEvents(provider))) {
    const known = names.length === 0 ? 'no providers are configured' : `configured providers: ${names.join(', ')}`;
    throw notFound(`no provider named ${JSON.stringify(provider)}; ${known}`);
  }
}

/** The event list of GET /api/events and list_webhook_events: each event with its one-line summary (MCP cuts it shorter). */
export async function listEventsWithSummaries(deps: ListEventsDeps, query: ListQuery): Promise<ApiEventList> {
  await assertKnownProvider(deps, query.provider);
  return deps.store.listWithSummaries(query);
}
