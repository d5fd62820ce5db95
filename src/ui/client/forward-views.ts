/**
 * Forwarding in the UI: the Forwards page (each rule's health, pause and resume, retry the dead),
 * the event detail's Forwarding tab (each rule's delivery and its attempts), and the list row's
 * mark. All of it reads /api/forwards and /api/events/{id}/deliveries; nothing is kept client side
 * but what is on screen.
 */
import { h, type JSX } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ForwardState } from '../../../generated/constants.ts';
import type { ApiEventSummary, Delivery, DeliveryAttempt, ForwardRuleStatus } from '../../../generated/types.ts';
import { ApiError, type ApiClient } from './api-client.ts';
import { formatFullTime, formatRelative, formatTime } from './format.ts';
import { page, table } from './layout.ts';
import { ResponseExcerpt, statusClass } from './response-view.ts';

// Rule health and unsettled deliveries change on their own while the page is open.
const REFRESH_MS = 3_000;

const MARK: Readonly<Record<ForwardState, { glyph: string; words: string; tone: string }>> = {
  delivered: { glyph: '✓', words: 'Forwarded', tone: 'good' },
  pending: { glyph: '…', words: 'Forwarding pending', tone: 'warn' },
  failed: { glyph: '!', words: 'Forwarding failed', tone: 'bad' },
};

/** The list row's small forwarding mark; nothing for an event no rule took. */
export function forwardMark(event: ApiEventSummary): JSX.Element | null {
  if (event.forward_state === undefined) return null;
  const look = MARK[event.forward_state];
  return h(
    'span',
    {
      class: `fwd-mark fwd-${look.tone}`,
      title: look.words,
      role: 'img',
      'aria-label': look.words,
      'data-forward-state': event.forward_state,
    },
    look.glyph,
  );
}

const STATE_WORDS: Readonly<Record<Delivery['state'], { words: string; tone: string }>> = {
  pending: { words: 'Pending', tone: 'neutral' },
  delivering: { words: 'Delivering', tone: 'warn' },
  delivered: { words: 'Delivered', tone: 'good' },
  failed: { words: 'Retrying', tone: 'warn' },
  dead: { words: 'Dead', tone: 'bad' },
};

const errorText = (err: unknown, fallback: string): string => (err instanceof ApiError ? err.message : fallback);

/** Polls `load` every REFRESH_MS while `keepPolling` says so; `reload` fetches at once. */
function usePolled<T>(
  load: () => Promise<T>,
  keepPolling: (value: T) => boolean,
  failure: string,
  dependencies: readonly unknown[],
): { value: T | null; error: string | null; reload: () => void } {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [generation, setGeneration] = useState(0);
  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  useEffect(() => {
    let current = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = (): void => {
      load().then(
        (loaded) => {
          if (!current) return;
          setValue(() => loaded);
          setError(null);
          if (keepPolling(loaded)) timer = setTimeout(run, REFRESH_MS);
        },
        (err: unknown) => {
          if (!current) return;
          setError(errorText(err, failure));
          timer = setTimeout(run, REFRESH_MS);
        },
      );
    };
    run();
    return () => {
      current = false;
      clearTimeout(timer);
    };
    // The caller names what the load depends on, as with useEffect itself.
  }, [...dependencies, generation]);
  return { value, error, reload };
}

function ageWords(seconds: number | null): string {
  if (seconds === null) return '—';
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

function RuleCard({
  rule,
  api,
  onChanged,
}: {
  rule: ForwardRuleStatus;
  api: ApiClient;
  onChanged: () => void;
}): JSX.Element {
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ text: string; bad: boolean } | null>(null);
  const act = (run: () => Promise<string>): void => {
    setBusy(true);
    setMessage(null);
    run()
      .then(
        (text) => setMessage({ text, bad: false }),
        (err: unknown) => setMessage({ text: errorText(err, 'The request failed.'), bad: true }),
      )
      // Whatever happened, show the rule as the server now has it.
      .finally(() => {
        setBusy(false);
        onChanged();
      });
  };
  const stateLook = rule.paused
    ? { words: 'Paused', tone: 'warn' }
    : rule.dead > 0 || rule.last_error !== null
      ? { words: rule.dead > 0 ? 'Has dead deliveries' : 'Retrying', tone: rule.dead > 0 ? 'bad' : 'warn' }
      : { words: 'Healthy', tone: 'good' };
  return h(
    'li',
    { class: 'provider-card forward-card', 'data-rule': rule.name },
    h(
      'div',
      { class: 'provider-head' },
      h('h2', { class: 'provider-name' }, rule.name),
      h('span', { class: `pill pill-${stateLook.tone}`, 'data-testid': 'rule-state' }, stateLook.words),
    ),
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'To'),
      h('dd', { class: 'mono truncate-text', title: rule.to }, rule.to),
      h('dt', null, 'Pending'),
      h('dd', { 'data-testid': 'rule-pending' }, String(rule.pending)),
      h('dt', null, 'Oldest pending'),
      h('dd', { 'data-testid': 'rule-oldest' }, ageWords(rule.oldest_pending_age)),
      h('dt', null, 'Dead'),
      h('dd', { 'data-testid': 'rule-dead' }, String(rule.dead)),
      h('dt', null, 'Delivered (1 h)'),
      h('dd', { 'data-testid': 'rule-delivered' }, String(rule.delivered_last_hour)),
      h('dt', null, 'Last error'),
      h(
        'dd',
        { 'data-testid': 'rule-last-error' },
        rule.last_error === null
          ? h('span', { class: 'muted' }, 'none')
          : [
              h('span', null, rule.last_error),
              rule.last_error_at === null
                ? null
                : h(
                    'span',
                    { class: 'muted', title: formatFullTime(rule.last_error_at) },
                    ` · ${formatRelative(rule.last_error_at, Date.now())}`,
                  ),
            ],
      ),
    ),
    h(
      'div',
      { class: 'toolbar forward-actions' },
      h(
        'button',
        {
          type: 'button',
          class: 'btn btn-small',
          disabled: busy,
          'data-testid': rule.paused ? 'resume' : 'pause',
          onClick: () =>
            act(async () => {
              const next = await api.setPaused(rule.name, !rule.paused);
              return next.paused ? 'Paused: deliveries wait until you resume.' : 'Resumed.';
            }),
        },
        rule.paused ? 'Resume' : 'Pause',
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'btn btn-small',
          disabled: busy || rule.dead === 0,
          title: rule.dead === 0 ? 'No dead deliveries' : 'Send every dead delivery again, with fresh attempts',
          'data-testid': 'retry-dead',
          onClick: () =>
            act(async () => {
              const result = await api.retryDead(rule.name);
              return `${result.retried} dead deliver${result.retried === 1 ? 'y' : 'ies'} queued again.`;
            }),
        },
        'Retry dead',
      ),
    ),
    message === null
      ? null
      : h('p', { class: message.bad ? 'form-error' : 'muted', role: message.bad ? 'alert' : 'status' }, message.text),
  );
}

export function ForwardsView({ api }: { api: ApiClient }): JSX.Element {
  const { value, error, reload } = usePolled(
    () => api.forwards(),
    () => true,
    'Could not load forward rules.',
    [api],
  );
  return page(
    'forwards-title',
    'Forwards',
    'Rules that deliver every new event to your consumer, with retries. Configure them under forward: in switchboard.yaml.',
    error ? h('p', { class: 'form-error', role: 'alert' }, error) : null,
    value === null
      ? h('p', { class: 'muted' }, error ? '' : 'Loading…')
      : value.rules.length === 0
        ? h(
            'div',
            { class: 'empty', 'data-testid': 'forwards-empty' },
            h('p', { class: 'empty-title' }, 'No forward rules'),
            h(
              'p',
              null,
              'Add one to switchboard.yaml, for example ',
              h('code', null, 'forward: { local-app: { to: http://127.0.0.1:3000/webhooks } }'),
              ', and restart.',
            ),
          )
        : h(
            'ul',
            { class: 'provider-grid', 'aria-label': 'Forward rules' },
            value.rules.map((rule) => h(RuleCard, { key: rule.name, rule, api, onChanged: reload })),
          ),
  );
}

function attemptResult(a: DeliveryAttempt): JSX.Element {
  if (a.status !== null && a.error === null) {
    return h('span', { class: `pill pill-${statusClass(a.status)}` }, `HTTP ${a.status}`);
  }
  return h(
    'span',
    { class: `pill pill-${statusClass(a.status)}`, 'data-testid': 'attempt-error' },
    a.error ?? `HTTP ${a.status ?? '?'}`,
  );
}

function DeliveryCard({
  delivery: d,
  api,
  onChanged,
}: {
  delivery: Delivery;
  api: ApiClient;
  onChanged: () => void;
}): JSX.Element {
  const [retryError, setRetryError] = useState<string | null>(null);
  const look = STATE_WORDS[d.state];
  const last = d.attempts.at(-1);
  return h(
    'section',
    { class: 'delivery', 'data-delivery-rule': d.rule, 'data-delivery-state': d.state },
    h(
      'div',
      { class: 'delivery-head' },
      h('h4', { class: 'subhead' }, d.rule),
      h('span', { class: `pill pill-${look.tone}`, 'data-testid': 'delivery-state' }, look.words),
      h(
        'span',
        { class: 'muted' },
        d.state === 'delivered' && d.delivered_at !== null
          ? ` after ${d.attempt_count} attempt${d.attempt_count === 1 ? '' : 's'}, ${formatTime(d.delivered_at)}`
          : d.next_attempt_at !== null
            ? ` next attempt (${d.attempt_count + 1}) ${formatTime(d.next_attempt_at)}`
            : '',
      ),
      d.state === 'failed' || d.state === 'dead'
        ? h(
            'button',
            {
              type: 'button',
              class: 'btn btn-small',
              'data-testid': 'retry-delivery',
              onClick: () => {
                setRetryError(null);
                api.retryDelivery(d.id).then(onChanged, (err: unknown) => {
                  setRetryError(errorText(err, 'Retry failed.'));
                });
              },
            },
            'Retry now',
          )
        : null,
    ),
    h('p', { class: 'muted mono delivery-id', title: 'X-Switchboard-Delivery' }, d.id),
    retryError ? h('p', { class: 'form-error', role: 'alert' }, retryError) : null,
    d.attempts.length === 0
      ? h('p', { class: 'muted' }, 'No attempt yet.')
      : table(
          { class: 'table history-table', 'aria-label': `Attempts to ${d.rule}` },
          ['#', 'When', 'Result'],
          d.attempts.map((a) =>
            h(
              'tr',
              { key: a.attempt },
              h('td', null, String(a.attempt)),
              h('td', { class: 'h-when', title: formatFullTime(a.started_at) }, formatTime(a.started_at)),
              h(
                'td',
                { class: 'h-result' },
                attemptResult(a),
                a.ms !== null ? h('span', { class: 'muted' }, ` ${Math.round(a.ms)} ms`) : null,
              ),
            ),
          ),
        ),
    last === undefined
      ? null
      : h(ResponseExcerpt, { excerpt: last.response_excerpt, contentType: last.response_content_type }),
  );
}

const settled = (d: Delivery): boolean => d.state === 'delivered' || d.state === 'dead';

/** The detail's Forwarding tab: the event's delivery to each rule that took it. */
export function DeliveriesPanel({ api, eventId }: { api: ApiClient; eventId: string }): JSX.Element {
  const { value, error, reload } = usePolled(
    () => api.deliveries(eventId),
    (v) => !v.deliveries.every(settled),
    'Could not load the deliveries.',
    [api, eventId],
  );
  return h(
    'div',
    { class: 'deliveries', 'data-testid': 'deliveries' },
    error ? h('p', { class: 'form-error', role: 'alert' }, error) : null,
    value === null
      ? h('p', { class: 'muted' }, error ? '' : 'Loading…')
      : value.deliveries.length === 0
        ? h(
            'p',
            { class: 'muted', 'data-testid': 'no-deliveries' },
            'No forward rule took this event: none matched it, it failed its check on arrival, or it arrived before the rule existed.',
          )
        : value.deliveries.map((d) => h(DeliveryCard, { key: d.id, delivery: d, api, onChanged: reload })),
  );
}
