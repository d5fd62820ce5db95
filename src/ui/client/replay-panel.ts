import { h, type JSX } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ReplayErrorReason } from '../../../generated/constants.ts';
import type { ReplayAttempt, ReplayResult } from '../../../generated/types.ts';
import { ApiError, type ApiClient } from './api-client.ts';
import { formatFullTime, formatTime } from './format.ts';
import { Icon } from './icons.ts';
import { table } from './layout.ts';
import { ResponseExcerpt, statusClass } from './response-view.ts';

type Outcome = { kind: 'result'; result: ReplayResult; unsigned: boolean } | { kind: 'error'; error: ApiError } | null;

/** Why an attempt did not deliver, as a person reads it in the history. */
const REASON_WORDS: Readonly<Record<ReplayErrorReason, string>> = {
  failed_check: 'Refused: failed its check on arrival (send unsigned)',
  bad_target: 'Refused: bad target URL',
  target_not_allowed: 'Refused: target not allowed',
  could_not_resolve: 'Could not resolve the host',
  could_not_connect: 'Could not connect',
  no_answer: 'No answer',
  rate_limited: 'Refused: rate limited',
  internal: 'Failed: internal error',
};

/** For attempts recorded before the history kept a reason: the nearest words for the code. */
const CODE_WORDS: Readonly<Record<NonNullable<ReplayAttempt['error_code']>, string>> = {
  invalid_argument: 'Refused',
  replay_failed: 'Could not deliver',
  rate_limited: 'Refused: rate limited',
  not_found: 'Refused: event not found',
  internal: 'Failed: internal error',
};

function failureWords(attempt: ReplayAttempt): string {
  if (attempt.error_reason === 'bad_target' && attempt.target_url === null) return 'Refused: no target URL';
  if (attempt.error_reason !== undefined) return REASON_WORDS[attempt.error_reason];
  return attempt.error_code === null ? 'Not delivered' : CODE_WORDS[attempt.error_code];
}

export function ReplayPanel({
  api,
  eventId,
  defaultTarget,
  serverTokenCaller,
  unsignedRule,
}: {
  api: ApiClient;
  eventId: string;
  defaultTarget: string | null;
  /** The caller name of SWITCHBOARD_TOKEN: its attempts say "server token". */
  serverTokenCaller: string | null;
  /** Set for an event that failed its check on arrival: why it can only be sent unsigned. */
  unsignedRule: string | null;
}): JSX.Element {
  const unsigned = unsignedRule !== null;
  const [target, setTarget] = useState(defaultTarget ?? '');
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [history, setHistory] = useState<ReplayAttempt[] | null>(null);
  const [historyError, setHistoryError] = useState<string | null>(null);

  const loadHistory = useCallback(() => {
    api
      .replays(eventId)
      .then((h) => {
        setHistory(h.attempts);
        setHistoryError(null);
      })
      .catch((err: unknown) =>
        setHistoryError(err instanceof ApiError ? err.message : 'Could not load the replay history.'),
      );
  }, [api, eventId]);

  useEffect(() => {
    setOutcome(null);
    setHistory(null);
    loadHistory();
  }, [loadHistory]);
  useEffect(() => setTarget(defaultTarget ?? ''), [defaultTarget]);

  const replay = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setOutcome(null);
    try {
      setOutcome({ kind: 'result', result: await api.replay(eventId, target, unsigned), unsigned });
    } catch (err) {
      setOutcome({
        kind: 'error',
        error: err instanceof ApiError ? err : new ApiError(0, 'internal', 'Replay failed.'),
      });
    } finally {
      setBusy(false);
      loadHistory();
    }
  };

  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'replay-title' },
    h('h3', { id: 'replay-title', class: 'card-title' }, 'Replay'),
    unsigned ? h('p', { class: 'notice', role: 'note', 'data-testid': 'replay-unsigned-rule' }, unsignedRule) : null,
    h(
      'form',
      { class: 'replay-form', onSubmit: replay },
      h('label', { for: 'replay-target', class: 'field-label' }, 'Target URL'),
      h(
        'div',
        { class: 'input-group' },
        h('input', {
          id: 'replay-target',
          class: 'input grow mono',
          type: 'url',
          inputMode: 'url',
          placeholder: defaultTarget ?? 'http://127.0.0.1:3000/webhooks',
          value: target,
          required: defaultTarget === null,
          onInput: (ev: Event) => setTarget((ev.currentTarget as HTMLInputElement).value),
        }),
        h(
          'button',
          { type: 'submit', class: 'btn btn-primary', disabled: busy },
          h(Icon, { name: 'send' }),
          busy ? 'Sending…' : unsigned ? 'Send unsigned' : 'Replay',
        ),
      ),
      h(
        'p',
        { class: 'hint' },
        defaultTarget
          ? ['Default: ', h('code', null, defaultTarget), '. ']
          : 'No default target is configured (replay.default_target). ',
        'Only loopback and replay.allow hosts are accepted.',
      ),
    ),
    outcome === null
      ? null
      : outcome.kind === 'result'
        ? h(
            'div',
            {
              class: `result result-${statusClass(outcome.result.response_status)}`,
              role: 'status',
              'data-testid': 'replay-result',
            },
            h(
              'strong',
              null,
              outcome.result.delivered
                ? `Delivered${outcome.unsigned ? ' unsigned' : ''} — HTTP ${outcome.result.response_status ?? '?'}`
                : 'Not delivered',
            ),
            h('span', null, ` in ${Math.round(outcome.result.response_ms)} ms to `),
            h('code', null, outcome.result.target_url),
            h(ResponseExcerpt, {
              excerpt: outcome.result.response_excerpt,
              contentType: outcome.result.response_content_type,
            }),
          )
        : h(
            'div',
            { class: 'result result-bad', role: 'alert', 'data-testid': 'replay-result' },
            h(
              'strong',
              null,
              outcome.error.code === 'rate_limited'
                ? 'Rate limited'
                : outcome.error.code === 'replay_failed'
                  ? 'Target unreachable'
                  : 'Refused',
            ),
            h('span', null, `: ${outcome.error.message}`),
            outcome.error.retryAfter !== undefined
              ? h('span', null, ` Try again in ${outcome.error.retryAfter} s.`)
              : null,
          ),
    h('h4', { class: 'subhead' }, 'History'),
    historyError
      ? h('p', { class: 'form-error' }, historyError)
      : history === null
        ? h('p', { class: 'muted' }, 'Loading…')
        : history.length === 0
          ? h('p', { class: 'muted' }, 'Never replayed.')
          : table(
              { class: 'table history-table', 'aria-label': 'Replay history' },
              ['When', 'Target', 'Result', 'By'],
              history.map((a) =>
                h(
                  'tr',
                  { key: a.id },
                  h('td', { class: 'h-when', title: formatFullTime(a.started_at) }, formatTime(a.started_at)),
                  h('td', { class: 'h-target mono truncate', title: a.target_url ?? '' }, a.target_url ?? '—'),
                  h(
                    'td',
                    { class: 'h-result' },
                    a.delivered
                      ? h(
                          'span',
                          {
                            class: `pill pill-${statusClass(a.response_status)}`,
                            title: a.response_content_type ?? undefined,
                          },
                          `HTTP ${a.response_status ?? '?'}`,
                        )
                      : h('span', { class: 'pill pill-bad', 'data-testid': 'history-failure' }, failureWords(a)),
                    a.unsigned === true
                      ? [
                          ' ',
                          h(
                            'span',
                            {
                              class: 'pill pill-warn',
                              title: 'Sent with no signature or token',
                              'data-testid': 'unsigned-pill',
                            },
                            'unsigned',
                          ),
                        ]
                      : null,
                    a.response_ms !== null ? h('span', { class: 'muted' }, ` ${Math.round(a.response_ms)} ms`) : null,
                  ),
                  h(
                    'td',
                    { class: 'h-by', 'data-testid': 'history-by' },
                    a.caller === serverTokenCaller
                      ? h('span', { title: 'SWITCHBOARD_TOKEN' }, 'server token')
                      : a.caller,
                  ),
                ),
              ),
            ),
  );
}
