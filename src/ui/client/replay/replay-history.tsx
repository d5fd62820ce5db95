import type { JSX } from 'preact';
import type { ReplayErrorReason } from '../../../../generated/constants.ts';
import type { ReplayAttempt } from '../../../../generated/types.ts';
import { Table } from '../components/page.tsx';
import { statusClass } from '../components/response-excerpt.tsx';
import { formatFullTime, formatTime } from '../format.ts';

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

function AttemptResult({ attempt: a }: { attempt: ReplayAttempt }): JSX.Element {
  return (
    <td class="h-result">
      {a.delivered ? (
        <span class={`pill pill-${statusClass(a.response_status)}`} title={a.response_content_type ?? undefined}>
          {`HTTP ${a.response_status ?? '?'}`}
        </span>
      ) : (
        <span class="pill pill-bad" data-testid="history-failure">
          {failureWords(a)}
        </span>
      )}
      {a.unsigned === true ? (
        <>
          {' '}
          <span class="pill pill-warn" title="Sent with no signature or token" data-testid="unsigned-pill">
            unsigned
          </span>
        </>
      ) : null}
      {a.response_ms !== null ? <span class="muted">{` ${Math.round(a.response_ms)} ms`}</span> : null}
    </td>
  );
}

/** The event's replays, newest first: when, where to, what happened in words, and who asked. */
export function ReplayHistory({
  history,
  error,
  serverTokenCaller,
}: {
  history: readonly ReplayAttempt[] | null;
  error: string | null;
  /** The caller name of SWITCHBOARD_TOKEN: its attempts say "server token". */
  serverTokenCaller: string | null;
}): JSX.Element {
  if (error) return <p class="form-error">{error}</p>;
  if (history === null) return <p class="muted">Loading…</p>;
  if (history.length === 0) return <p class="muted">Never replayed.</p>;
  return (
    <Table class="table history-table" label="Replay history" columns={['When', 'Target', 'Result', 'By']}>
      {history.map((a) => (
        <tr key={a.id}>
          <td class="h-when" title={formatFullTime(a.started_at)}>
            {formatTime(a.started_at)}
          </td>
          <td class="h-target mono truncate" title={a.target_url ?? ''}>
            {a.target_url ?? '—'}
          </td>
          <AttemptResult attempt={a} />
          <td class="h-by" data-testid="history-by">
            {a.caller === serverTokenCaller ? <span title="SWITCHBOARD_TOKEN">server token</span> : a.caller}
          </td>
        </tr>
      ))}
    </Table>
  );
}
