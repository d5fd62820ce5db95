import type { JSX } from 'preact';
import type { ProviderStatus, TrustMode } from '../../../../generated/types.ts';
import type { TrustLevel } from '../../../shared/trust-words.ts';
import { trustLook } from '../trust.ts';
import { Icon, type IconName } from './icons.tsx';

export function TrustBadge({
  trustMode,
  verified,
  size = 'small',
}: {
  trustMode: TrustMode;
  verified: boolean;
  size?: 'small' | 'large';
}): JSX.Element {
  const look = trustLook(trustMode, verified);
  return (
    <span class={`badge badge-${look.level} badge-${size}`} title={look.explain} data-trust={look.level}>
      <Icon name={look.icon} />
      {size === 'large' ? (
        <span class="badge-text">{look.label}</span>
      ) : (
        <>
          <span class="badge-text" aria-hidden="true">
            {look.short}
          </span>
          <span class="sr-only">{look.label}</span>
        </>
      )}
    </span>
  );
}

/** A provider's trust as a badge: what its events can be, not whether one was verified. */
export function ProviderTrustBadge({
  provider,
}: {
  provider: Pick<ProviderStatus, 'trust_mode' | 'secret_status' | 'credential'>;
}): JSX.Element {
  const { trust_mode: mode, secret_status: secret } = provider;
  const key = provider.credential === 'public_key' ? 'public key' : 'secret';
  const look: { level: TrustLevel; icon: IconName; label: string; explain: string } =
    mode === 'signed'
      ? secret === 'missing'
        ? {
            level: 'failed',
            icon: 'shield-x',
            label: `Signed — no ${key}`,
            explain: `Needs a ${key}: its deliveries are rejected until one is set.`,
          }
        : {
            level: 'verified',
            icon: 'shield-check',
            label: 'Signed',
            explain: 'Signatures are checked: its events can be verified.',
          }
      : { ...trustLook(mode, false), label: trustLook(mode, false).short };
  return (
    <span class={`badge badge-${look.level} badge-small`} title={look.explain} data-trust={look.level}>
      <Icon name={look.icon} />
      <span class="badge-text">{look.label}</span>
    </span>
  );
}
