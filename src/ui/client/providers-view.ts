import { h, type JSX } from 'preact';
import { SERVER_HOST, SERVER_PORT } from '../../../generated/constants.ts';
import type { ProviderStatus } from '../../../generated/types.ts';
import { CopyButton } from './copy-button.ts';
import { ProviderTrustBadge } from './trust-badge.ts';
import { page } from './layout.ts';

/** Where `switchboard trigger` sends unless given --url: the address switchboard binds by default. */
const DEFAULT_BASE = `http://${SERVER_HOST.default}:${SERVER_PORT.default}`;

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** The command that sends this provider a test event, as a user would paste it into a shell. */
export function triggerCommand(p: ProviderStatus, origin: string): string {
  const base = origin === DEFAULT_BASE ? '' : ` --url ${origin}`;
  if (p.family === 'queue') {
    const sample = shellQuote('{"type":"test.event","hello":"switchboard"}');
    return p.mode === 'streams'
      ? `redis-cli XADD ${p.channel ?? p.name} '*' payload ${sample}`
      : `redis-cli PUBLISH ${p.channel ?? p.name} ${sample}`;
  }
  if (p.trust_mode === 'signed') return `npx switchboard trigger ${p.name}${base}`;
  const header = p.trust_mode === 'token' ? ` -H 'X-Webhook-Token: $WEBHOOK_TOKEN'` : '';
  return `curl -X POST ${origin}${p.route ?? `/hooks/${p.name}`} -H 'Content-Type: application/json'${header} -d ${shellQuote('{"type":"test.event","hello":"switchboard"}')}`;
}

const SECRET_TEXT: Record<ProviderStatus['secret_status'], string> = {
  configured: 'Secret set',
  missing: 'Secret missing',
  'none-by-design': 'No secret (by design)',
};

export function ProvidersView({
  providers,
  error,
}: {
  providers: readonly ProviderStatus[] | null;
  error: string | null;
}): JSX.Element {
  const origin = location.origin;
  return page(
    'providers-title',
    'Providers',
    'Where events come from, how each one is verified, and a command to send it a test event.',
    error ? h('p', { class: 'form-error', role: 'alert' }, error) : null,
    providers === null
      ? h('p', { class: 'muted' }, 'Loading…')
      : providers.length === 0
        ? h(
            'div',
            { class: 'empty' },
            h('p', { class: 'empty-title' }, 'No providers configured'),
            h('p', null, 'Add providers to switchboard.yaml and restart.'),
          )
        : h(
            'ul',
            { class: 'provider-grid', 'aria-label': 'Configured providers' },
            providers.map((p) => {
              const command = triggerCommand(p, origin);
              return h(
                'li',
                { key: p.name, class: `provider-card${p.enabled ? '' : ' is-disabled'}`, 'data-provider': p.name },
                h(
                  'div',
                  { class: 'provider-head' },
                  h('h2', { class: 'provider-name' }, p.name),
                  h(ProviderTrustBadge, { provider: p }),
                ),
                h(
                  'dl',
                  { class: 'facts' },
                  h('dt', null, p.family === 'queue' ? 'Channel' : 'Route'),
                  h(
                    'dd',
                    { class: 'mono' },
                    p.family === 'queue' ? `${p.channel ?? ''} (${p.mode ?? ''})` : `POST ${p.route ?? ''}`,
                  ),
                  h('dt', null, 'Preset'),
                  h('dd', null, p.preset ?? p.trust_mode),
                  h('dt', null, 'Secret'),
                  h(
                    'dd',
                    null,
                    h(
                      'span',
                      {
                        class: `pill ${p.secret_status === 'missing' ? 'pill-bad' : p.secret_status === 'configured' ? 'pill-good' : 'pill-neutral'}`,
                      },
                      SECRET_TEXT[p.secret_status],
                    ),
                  ),
                  p.family === 'queue'
                    ? [
                        h('dt', null, 'Connection'),
                        h(
                          'dd',
                          null,
                          h(
                            'span',
                            {
                              class: `pill ${p.connection === 'connected' ? 'pill-good' : p.connection === 'connecting' ? 'pill-warn' : 'pill-bad'}`,
                            },
                            p.connection ?? 'disconnected',
                          ),
                        ),
                      ]
                    : null,
                  p.enabled
                    ? null
                    : [h('dt', null, 'State'), h('dd', null, h('span', { class: 'pill pill-neutral' }, 'disabled'))],
                ),
                h(
                  'div',
                  { class: 'command' },
                  h('code', { class: 'mono command-text' }, command),
                  h(CopyButton, { text: () => command, label: `Copy the test command for ${p.name}` }),
                ),
              );
            }),
          ),
  );
}
