import type { JSX } from 'preact';
import type { ReplayResult } from '../../../../generated/types.ts';
import type { ApiError } from '../api-client.ts';
import { ResponseExcerpt, statusClass } from '../components/response-excerpt.tsx';

export type Outcome = { kind: 'result'; result: ReplayResult; unsigned: boolean } | { kind: 'error'; error: ApiError };

function errorTitle(error: ApiError): string {
  if (error.code === 'rate_limited') return 'Rate limited';
  return error.code === 'replay_failed' ? 'Target unreachable' : 'Refused';
}

/** What the last replay did: delivered (with the consumer's answer) or not, and why. */
export function ReplayOutcome({ outcome }: { outcome: Outcome }): JSX.Element {
  if (outcome.kind === 'error') {
    return (
      <div class="result result-bad" role="alert" data-testid="replay-result">
        <strong>{errorTitle(outcome.error)}</strong>
        <span>{`: ${outcome.error.message}`}</span>
        {outcome.error.retryAfter !== undefined ? <span>{` Try again in ${outcome.error.retryAfter} s.`}</span> : null}
      </div>
    );
  }
  const { result, unsigned } = outcome;
  return (
    <div class={`result result-${statusClass(result.response_status)}`} role="status" data-testid="replay-result">
      <strong>
        {result.delivered
          ? `Delivered${unsigned ? ' unsigned' : ''} — HTTP ${result.response_status ?? '?'}`
          : 'Not delivered'}
      </strong>
      <span>{` in ${Math.round(result.response_ms)} ms to `}</span>
      <code>{result.target_url}</code>
      <ResponseExcerpt excerpt={result.response_excerpt} contentType={result.response_content_type} />
    </div>
  );
}
