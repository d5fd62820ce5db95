import type { JSX } from 'preact';
import type { EventDetail } from '../../../../generated/types.ts';
import { TrustBadge } from '../components/trust-badge.tsx';
import { trustLook } from '../trust.ts';

/** How the event was checked: the badge in words, what it means, the trust mode and the check's detail. */
export function TrustPanel({ event }: { event: EventDetail }): JSX.Element {
  const look = trustLook(event.trust_mode, event.verified);
  return (
    <section class={`trust-panel trust-${look.level}`} aria-label="Verification" data-testid="trust-panel">
      <TrustBadge trustMode={event.trust_mode} verified={event.verified} size="large" />
      <p class="trust-explain">{look.explain}</p>
      <dl class="trust-facts">
        <dt>Trust mode</dt>
        <dd>
          <code>{event.trust_mode}</code>
        </dd>
        <dt>Check</dt>
        <dd data-testid="verify-detail">{event.verify_detail}</dd>
      </dl>
    </section>
  );
}
