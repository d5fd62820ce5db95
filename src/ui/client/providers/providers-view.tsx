import type { JSX } from 'preact';
import { useContext } from 'preact/hooks';
import type { ProviderStatus } from '../../../../generated/types.ts';
import type { ApiClient } from '../api-client.ts';
import { CliCommand } from '../cli-command.ts';
import { CopyButton } from '../components/copy-button.tsx';
import { ErrorAlert } from '../components/load-status.tsx';
import { Page } from '../components/page.tsx';
import { ProviderTrustBadge } from '../components/trust-badge.tsx';
import { useLoaded } from '../hooks/use-polled.ts';
import { triggerCommand } from './trigger-command.ts';

const SECRET_TEXT: Record<ProviderStatus['secret_status'], string> = {
  configured: 'Secret set',
  missing: 'Secret missing',
  'none-by-design': 'No secret (by design)',
};

/** A provider checked with a public key holds no secret: say what is set (issue 41.10). */
const PUBLIC_KEY_TEXT: Record<ProviderStatus['secret_status'], string> = {
  configured: 'Public key set',
  missing: 'Public key missing',
  'none-by-design': SECRET_TEXT['none-by-design'],
};

const SECRET_TONE: Record<ProviderStatus['secret_status'], string> = {
  configured: 'pill-good',
  missing: 'pill-bad',
  'none-by-design': 'pill-neutral',
};

function connectionTone(connection: ProviderStatus['connection']): string {
  if (connection === 'connected') return 'pill-good';
  return connection === 'connecting' ? 'pill-warn' : 'pill-bad';
}

function ProviderCard({
  api,
  provider: p,
  origin,
}: {
  api: ApiClient;
  provider: ProviderStatus;
  origin: string;
}): JSX.Element {
  const cli = useContext(CliCommand);
  // A token provider's header and the variable its config reads the token from; for a signed one,
  // whether it is checked with a public key (its config says, so the server does).
  const needsDetail = p.trust_mode === 'token' || p.trust_mode === 'signed';
  const detail = useLoaded(
    () => (needsDetail ? api.providerDetail(p.name) : Promise.resolve(null)),
    [api, p.name, needsDetail],
    'Could not load the provider.',
  );
  const command = triggerCommand(p, origin, cli, detail.value ?? undefined);
  const publicKey = detail.value?.verifies_with_public_key === true;
  // Until the detail answers, a command would be a guess: a token header that may be wrong, or a
  // trigger line for a provider checked with a public key, which cannot be triggered. If the
  // detail fails, the command without it is still the best offer.
  const pending = needsDetail && detail.value === null && detail.error === null;
  return (
    <li class={`provider-card${p.enabled ? '' : ' is-disabled'}`} data-provider={p.name}>
      <div class="provider-head">
        <h2 class="provider-name">{p.name}</h2>
        <ProviderTrustBadge provider={p} />
      </div>
      <dl class="facts">
        <dt>{p.family === 'queue' ? 'Channel' : 'Route'}</dt>
        <dd class="mono">{p.family === 'queue' ? `${p.channel ?? ''} (${p.mode ?? ''})` : `POST ${p.route ?? ''}`}</dd>
        <dt>Preset</dt>
        <dd>{p.preset ?? p.trust_mode}</dd>
        <dt>{p.credential === 'public_key' ? 'Public key' : 'Secret'}</dt>
        <dd>
          <span class={`pill ${SECRET_TONE[p.secret_status]}`}>
            {(p.credential === 'public_key' ? PUBLIC_KEY_TEXT : SECRET_TEXT)[p.secret_status]}
          </span>
        </dd>
        {p.family === 'queue' ? (
          <>
            <dt>Connection</dt>
            <dd>
              <span class={`pill ${connectionTone(p.connection)}`}>{p.connection ?? 'disconnected'}</span>
            </dd>
          </>
        ) : null}
        {p.enabled ? null : (
          <>
            <dt>State</dt>
            <dd>
              <span class="pill pill-neutral">disabled</span>
            </dd>
          </>
        )}
      </dl>
      {pending ? (
        <p class="muted command-pending">Loading the test command…</p>
      ) : publicKey ? (
        <p class="command-hint">
          Cannot be triggered locally: switchboard checks this provider&apos;s signature with its public key, and only
          the provider holds the private key. Send a test event from the provider, or replay a received event (it keeps
          its original signature).
        </p>
      ) : (
        <div class="command">
          <code class="mono command-text">{command}</code>
          <CopyButton text={() => command} label={`Copy the test command for ${p.name}`} />
        </div>
      )}
    </li>
  );
}

/** The Providers page: each provider's route or channel, trust, secret and a test command (or why there is none). */
export function ProvidersView({
  api,
  providers,
  error,
}: {
  api: ApiClient;
  providers: readonly ProviderStatus[] | null;
  error: string | null;
}): JSX.Element {
  return (
    <Page
      titleId="providers-title"
      title="Providers"
      lead="Where events come from, how each one is verified, and a command to send it a test event."
    >
      <ErrorAlert error={error} />
      {providers === null ? (
        <p class="muted">Loading…</p>
      ) : providers.length === 0 ? (
        <div class="empty">
          <p class="empty-title">No providers configured</p>
          <p>Add providers to switchboard.yaml and restart.</p>
        </div>
      ) : (
        <ul class="provider-grid" aria-label="Configured providers">
          {providers.map((p) => (
            <ProviderCard key={p.name} api={api} provider={p} origin={location.origin} />
          ))}
        </ul>
      )}
    </Page>
  );
}
