import type { JSX } from 'preact';
import type { ApiEventDetail, SenderHint } from '../../../../generated/types.ts';
import { TrustBadge } from '../components/trust-badge.tsx';
import { trustLook } from '../trust.ts';

/**
 * How the event was checked: the badge in words, what it means, the trust mode and the check's
 * detail; for an open provider's event that carries a known provider's signature, who it looks
 * like and the config that would check it.
 */
export function TrustPanel({ event }: { event: ApiEventDetail }): JSX.Element {
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
      {event.sender_hint && <SenderHintNote hint={event.sender_hint} />}
    </section>
  );
}

/** The sentence, and the config line to copy (the others commented out when several providers sign alike). */
function SenderHintNote({ hint }: { hint: SenderHint }): JSX.Element {
  return (
    <div class="sender-hint" data-testid="sender-hint">
      <p>{hint.message}</p>
      <pre aria-label="Config that would check it">
        <code>{hint.config}</code>
      </pre>
    </div>
  );
}
