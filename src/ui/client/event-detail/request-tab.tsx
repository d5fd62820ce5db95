import type { JSX } from 'preact';
import type { EventDetail, EventRequest } from '../../../../generated/types.ts';
import { Table } from '../components/page.tsx';

const STATUS_TEXT: Readonly<Record<number, string>> = {
  200: 'OK',
  401: 'Unauthorized',
  503: 'Service Unavailable',
};

/** What the answer meant for the sender, in a sentence. */
function answerMeaning(status: number): string {
  if (status >= 200 && status < 300) return 'Stored, and the sender was told so.';
  if (status === 401) {
    return 'Refused: the signature or token check failed. The sender was told 401; the delivery was kept for inspection only.';
  }
  if (status === 503) {
    return 'The sender was told to retry (the commit was not confirmed in time); the event was stored after all, so expect the retry as a duplicate.';
  }
  return `The sender was answered ${status}.`;
}

function decodeQueryPart(part: string): string {
  try {
    return decodeURIComponent(part.replaceAll('+', ' '));
  } catch {
    return part;
  }
}

function QueryTable({ query }: { query: string }): JSX.Element {
  const params = query === '' ? [] : query.split('&').filter((p) => p !== '');
  if (params.length === 0) return <span class="muted">none</span>;
  return (
    <Table class="table query-table" label="Query parameters">
      {params.map((part, i) => {
        const eq = part.indexOf('=');
        const name = decodeQueryPart(eq === -1 ? part : part.slice(0, eq));
        const value = eq === -1 ? '' : decodeQueryPart(part.slice(eq + 1));
        return (
          <tr key={i}>
            <th scope="row" class="mono">
              {name}
            </th>
            <td class={`mono${value === '[redacted]' ? ' muted' : ''}`}>{value}</td>
          </tr>
        );
      })}
    </Table>
  );
}

function RequestFacts({ event, request }: { event: EventDetail; request: EventRequest }): JSX.Element {
  const status = request.response_status;
  const tone = status < 300 ? 'good' : status < 500 ? 'bad' : 'warn';
  return (
    <div class="tab-body">
      <p class="request-line mono" data-testid="request-line">
        <strong>{request.method}</strong> {request.path}
        {request.query === '' ? null : <span class="request-query">{`?${request.query}`}</span>}
      </p>
      <dl class="facts request-facts">
        <dt>Answered</dt>
        <dd data-testid="request-answer">
          <span class={`pill pill-${tone}`}>{`${status} ${STATUS_TEXT[status] ?? ''}`.trim()}</span>{' '}
          <span class="muted">{answerMeaning(status)}</span>
        </dd>
        <dt>Method</dt>
        <dd class="mono">{request.method}</dd>
        <dt>Path</dt>
        <dd class="mono">{request.path}</dd>
        <dt>Query</dt>
        <dd>
          <QueryTable query={request.query} />
        </dd>
        <dt>From</dt>
        <dd class="mono">{event.source_ip ?? <span class="muted">unknown</span>}</dd>
        <dt>Content type</dt>
        <dd class="mono">{event.content_type ?? <span class="muted">none</span>}</dd>
      </dl>
      <p class="hint">
        Values of query parameters whose names look like secrets (token, key, secret, signature, code, …) are replaced
        by [redacted] before anything is stored.
      </p>
    </div>
  );
}

export function RequestTab({ event }: { event: EventDetail }): JSX.Element {
  if (event.request !== undefined) return <RequestFacts event={event} request={event.request} />;
  return (
    <div class="tab-body">
      <p class="muted" data-testid="request-none">
        {event.trust_mode === 'queue'
          ? 'Read from a Redis queue: a queue message arrives without an HTTP request.'
          : 'Not recorded: this event was stored before switchboard kept the original request.'}
      </p>
    </div>
  );
}
