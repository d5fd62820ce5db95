/**
 * The Forwards page: each rule's health, pause and resume, retry the dead. It reads /api/forwards;
 * nothing is kept client side but what is on screen.
 */
import type { JSX } from 'preact';
import type { ApiClient } from '../api-client.ts';
import { LoadStatus } from '../components/load-status.tsx';
import { Page } from '../components/page.tsx';
import { usePolled } from '../hooks/use-polled.ts';
import { FORWARDS_REFRESH_MS } from './deliveries-panel.tsx';
import { RuleCard } from './rule-card.tsx';

export function ForwardsView({ api }: { api: ApiClient }): JSX.Element {
  const { value, error, reload } = usePolled(() => api.forwards(), [api], {
    failure: 'Could not load forward rules.',
    everyMs: FORWARDS_REFRESH_MS,
  });
  return (
    <Page
      titleId="forwards-title"
      title="Forwards"
      lead="Rules that deliver every new event to your consumer, with retries. Configure them under forward: in switchboard.yaml."
    >
      <LoadStatus error={error} loaded={value !== null} />
      {value === null ? null : value.rules.length === 0 ? (
        <div class="empty" data-testid="forwards-empty">
          <p class="empty-title">No forward rules</p>
          <p>
            Add one to switchboard.yaml, for example{' '}
            <code>{'forward: { local-app: { to: http://127.0.0.1:3000/webhooks } }'}</code>, and restart.
          </p>
        </div>
      ) : (
        <ul class="provider-grid" aria-label="Forward rules">
          {value.rules.map((rule) => (
            <RuleCard key={rule.name} rule={rule} api={api} onChanged={reload} />
          ))}
        </ul>
      )}
    </Page>
  );
}
