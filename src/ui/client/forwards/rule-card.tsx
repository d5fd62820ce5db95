import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { ForwardRuleStatus } from '../../../../generated/types.ts';
import type { ApiClient } from '../api-client.ts';
import { formatFullTime, formatRelative } from '../format.ts';
import { errorText } from '../hooks/use-polled.ts';

function ageWords(seconds: number | null): string {
  if (seconds === null) return '—';
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

/**
 * The rule's health in a word and a tone, from what stands now (dead and retrying deliveries),
 * never from last_error, which stays after the consumer has recovered.
 */
function ruleState(rule: ForwardRuleStatus): { words: string; tone: string } {
  if (rule.paused) return { words: 'Paused', tone: 'warn' };
  if (rule.dead > 0) return { words: 'Has dead deliveries', tone: 'bad' };
  if (rule.retrying > 0) return { words: 'Retrying', tone: 'warn' };
  return { words: 'Healthy', tone: 'good' };
}

function LastError({ rule }: { rule: ForwardRuleStatus }): JSX.Element {
  if (rule.last_error === null) return <span class="muted">none</span>;
  return (
    <>
      <span>{rule.last_error}</span>
      {rule.last_error_at === null ? null : (
        <span class="muted" title={formatFullTime(rule.last_error_at)}>
          {` · ${formatRelative(rule.last_error_at, Date.now())}`}
        </span>
      )}
    </>
  );
}

/** What waits, what died, what went through, and the last error. */
function RuleFacts({ rule }: { rule: ForwardRuleStatus }): JSX.Element {
  return (
    <dl class="facts">
      <dt>To</dt>
      <dd class="mono truncate-text" title={rule.to}>
        {rule.to}
      </dd>
      <dt>Pending</dt>
      <dd data-testid="rule-pending">
        {String(rule.pending)}
        {rule.retrying > 0 ? <span class="muted">{` (${rule.retrying} retrying)`}</span> : null}
      </dd>
      <dt>Oldest pending</dt>
      <dd data-testid="rule-oldest">{ageWords(rule.oldest_pending_age)}</dd>
      <dt>Dead</dt>
      <dd data-testid="rule-dead">{String(rule.dead)}</dd>
      <dt>Delivered (1 h)</dt>
      <dd data-testid="rule-delivered">{String(rule.delivered_last_hour)}</dd>
      <dt>Last error</dt>
      <dd data-testid="rule-last-error">
        <LastError rule={rule} />
      </dd>
    </dl>
  );
}

/** One forward rule on the Forwards page: its health, Pause or Resume, and Retry dead. */
export function RuleCard({
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
  const togglePause = (): void =>
    act(async () => {
      const next = await api.setPaused(rule.name, !rule.paused);
      return next.paused ? 'Paused: deliveries wait until you resume.' : 'Resumed.';
    });
  const retryDead = (): void =>
    act(async () => {
      const result = await api.retryDead(rule.name);
      return `${result.retried} dead deliver${result.retried === 1 ? 'y' : 'ies'} queued again.`;
    });
  const state = ruleState(rule);
  return (
    <li class="provider-card forward-card" data-rule={rule.name}>
      <div class="provider-head">
        <h2 class="provider-name">{rule.name}</h2>
        <span class={`pill pill-${state.tone}`} data-testid="rule-state">
          {state.words}
        </span>
      </div>
      <RuleFacts rule={rule} />
      <div class="toolbar forward-actions">
        <button
          type="button"
          class="btn btn-small"
          disabled={busy}
          data-testid={rule.paused ? 'resume' : 'pause'}
          onClick={togglePause}
        >
          {rule.paused ? 'Resume' : 'Pause'}
        </button>
        <button
          type="button"
          class="btn btn-small"
          disabled={busy || rule.dead === 0}
          title={rule.dead === 0 ? 'No dead deliveries' : 'Send every dead delivery again, with fresh attempts'}
          data-testid="retry-dead"
          onClick={retryDead}
        >
          Retry dead
        </button>
      </div>
      {message === null ? null : (
        <p class={message.bad ? 'form-error' : 'muted'} role={message.bad ? 'alert' : 'status'}>
          {message.text}
        </p>
      )}
    </li>
  );
}
