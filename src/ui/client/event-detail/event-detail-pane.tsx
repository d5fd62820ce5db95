/** One event in full: what it is, how it was checked, its facts, its content in tabs, and Replay. */
import type { JSX } from 'preact';
import type { EventDetail } from '../../../../generated/types.ts';
import type { ApiClient } from '../api-client.ts';
import { useLoaded } from '../hooks/use-polled.ts';
import { ReplayPanel } from '../replay/replay-panel.tsx';
import { replayRule } from '../trust.ts';
import { useCompareCandidate } from './compare-candidate.ts';
import { DetailHeader } from './detail-header.tsx';
import { DetailTabs, type DetailTab } from './detail-tabs.tsx';
import { EventFacts } from './event-facts.tsx';
import { HeadersTab } from './headers-tab.tsx';
import { PayloadTab } from './payload-tab.tsx';
import { RequestTab } from './request-tab.tsx';
import { TrustPanel } from './trust-panel.tsx';

interface DetailProps {
  api: ApiClient;
  id: string;
  defaultTarget: string | null;
  /** The caller name of the server's own token, shown as "server token" in the replay history. */
  serverTokenCaller: string | null;
  /** The chosen tab, kept by the caller so that moving between events keeps it. */
  tab: string;
  onTab: (tab: string) => void;
  onClose: () => void;
  /** More tabs after the built-in ones (forwarding's delivery state, for instance). */
  extraTabs?: ((event: EventDetail) => DetailTab[]) | undefined;
}

export function EventDetailPane(props: DetailProps): JSX.Element {
  const { api, id } = props;
  const { value: event, error } = useLoaded(() => api.getEvent(id), [api, id], 'Could not load the event.');
  const compareWith = useCompareCandidate(api, event);

  if (error) {
    return (
      <div class="detail-empty">
        <p class="form-error" role="alert">
          {error}
        </p>
      </div>
    );
  }
  if (!event) {
    return (
      <div class="detail-empty">
        <p class="muted">Loading event…</p>
      </div>
    );
  }
  const tabs: DetailTab[] = [
    { id: 'payload', label: 'Payload', render: () => <PayloadTab api={api} event={event} /> },
    {
      id: 'headers',
      label: 'Headers',
      note: String(Object.keys(event.headers).length),
      render: () => <HeadersTab event={event} />,
    },
    { id: 'request', label: 'Request', render: () => <RequestTab event={event} /> },
    ...(props.extraTabs?.(event) ?? []),
  ];

  return (
    <article class="detail" aria-labelledby="detail-title">
      <DetailHeader event={event} compareWith={compareWith} onClose={props.onClose} />
      <TrustPanel event={event} />
      <EventFacts event={event} />
      <DetailTabs tabs={tabs} selected={props.tab} onSelect={props.onTab} />
      <ReplayPanel
        api={api}
        eventId={event.id}
        defaultTarget={props.defaultTarget}
        serverTokenCaller={props.serverTokenCaller}
        unsignedRule={replayRule(event)}
      />
    </article>
  );
}
