/** The event detail's Forwarding tab: the event's delivery to each rule that took it, with its attempts. */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { Delivery, DeliveryAttempt } from '../../../../generated/types.ts';
import type { ApiClient } from '../api-client.ts';
import { ErrorAlert, LoadStatus } from '../components/load-status.tsx';
import { Table } from '../components/page.tsx';
import { ResponseExcerpt, statusClass } from '../components/response-excerpt.tsx';
import { formatFullTime, formatTime } from '../format.ts';
import { errorText, usePolled } from '../hooks/use-polled.ts';

// Rule health and unsettled deliveries change on their own while the page is open.
export const FORWARDS_REFRESH_MS = 3_000;

const STATE_WORDS: Readonly<Record<Delivery['state'], { words: string; tone: string }>> = {
  pending: { words: 'Pending', tone: 'neutral' },
  delivering: { words: 'Delivering', tone: 'warn' },
  delivered: { words: 'Delivered', tone: 'good' },
  failed: { words: 'Retrying', tone: 'warn' },
  dead: { words: 'Dead', tone: 'bad' },
  cancelled: { words: 'Cancelled', tone: 'neutral' },
};

function AttemptResult({ attempt: a }: { attempt: DeliveryAttempt }): JSX.Element {
  if (a.status !== null && a.error === null) {
    return <span class={`pill pill-${statusClass(a.status)}`}>{`HTTP ${a.status}`}</span>;
  }
  return (
    <span class={`pill pill-${statusClass(a.status)}`} data-testid="attempt-error">
      {a.error ?? `HTTP ${a.status ?? '?'}`}
    </span>
  );
}

function stateNote(d: Delivery): string {
  if (d.state === 'cancelled') return d.cancel_reason === undefined ? '' : `: ${d.cancel_reason}`;
  if (d.state === 'delivered' && d.delivered_at !== null) {
    return ` after ${d.attempt_count} attempt${d.attempt_count === 1 ? '' : 's'}, ${formatTime(d.delivered_at)}`;
  }
  return d.next_attempt_at !== null ? ` next attempt (${d.attempt_count + 1}) ${formatTime(d.next_attempt_at)}` : '';
}

function DeliveryCard({ delivery: d, api, onChanged }: { delivery: Delivery; api: ApiClient; onChanged: () => void }) {
  const [retryError, setRetryError] = useState<string | null>(null);
  const look = STATE_WORDS[d.state];
  const last = d.attempts.at(-1);
  const retry = (): void => {
    setRetryError(null);
    api.retryDelivery(d.id).then(onChanged, (err: unknown) => setRetryError(errorText(err, 'Retry failed.')));
  };
  return (
    <section class="delivery" data-delivery-rule={d.rule} data-delivery-state={d.state}>
      <div class="delivery-head">
        <h4 class="subhead">{d.rule}</h4>
        <span class={`pill pill-${look.tone}`} data-testid="delivery-state">
          {look.words}
        </span>
        <span class="muted">{stateNote(d)}</span>
        {d.state === 'failed' || d.state === 'dead' ? (
          <button type="button" class="btn btn-small" data-testid="retry-delivery" onClick={retry}>
            Retry now
          </button>
        ) : null}
      </div>
      <p class="muted mono delivery-id" title="X-Switchboard-Delivery">
        {d.id}
      </p>
      <ErrorAlert error={retryError} />
      {d.attempts.length === 0 ? (
        <p class="muted">No attempt yet.</p>
      ) : (
        <Table class="table history-table" label={`Attempts to ${d.rule}`} columns={['#', 'When', 'Result']}>
          {d.attempts.map((a) => (
            <tr key={a.attempt}>
              <td>{String(a.attempt)}</td>
              <td class="h-when" title={formatFullTime(a.started_at)}>
                {formatTime(a.started_at)}
              </td>
              <td class="h-result">
                <AttemptResult attempt={a} />
                {a.ms !== null ? <span class="muted">{` ${Math.round(a.ms)} ms`}</span> : null}
              </td>
            </tr>
          ))}
        </Table>
      )}
      {last === undefined ? null : (
        <ResponseExcerpt excerpt={last.response_excerpt} contentType={last.response_content_type} />
      )}
    </section>
  );
}

const settled = (d: Delivery): boolean => d.state === 'delivered' || d.state === 'dead' || d.state === 'cancelled';

/** Refreshes itself until every delivery is delivered, dead or cancelled. */
export function DeliveriesPanel({ api, eventId }: { api: ApiClient; eventId: string }): JSX.Element {
  const { value, error, reload } = usePolled(() => api.deliveries(eventId), [api, eventId], {
    failure: 'Could not load the deliveries.',
    everyMs: FORWARDS_REFRESH_MS,
    keepPolling: (v) => !v.deliveries.every(settled),
  });
  return (
    <div class="deliveries" data-testid="deliveries">
      <LoadStatus error={error} loaded={value !== null} />
      {value === null ? null : value.deliveries.length === 0 ? (
        <p class="muted" data-testid="no-deliveries">
          No forward rule took this event: none matched it, it failed its check on arrival, or it arrived before the
          rule existed.
        </p>
      ) : (
        value.deliveries.map((d) => <DeliveryCard key={d.id} delivery={d} api={api} onChanged={reload} />)
      )}
    </div>
  );
}
