/**
 * What `switchboard serve` prints once it serves: where, what it receives (each provider's route
 * or channel, trust mode and whether its secret is set, never the secret), where it forwards, how
 * to add a provider when there is none, and the first API token.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { unsetPlaceholdersOf, type UnsetVariable } from '../config/interpolate-env.ts';
import type { ProviderConfig, ResolvedConfig } from '../config/resolve-config.ts';
import { TOKEN_FILE_NAME, type InitialTokenResult } from '../auth/ensure-initial-token.ts';
import type { RunningSwitchboard } from '../server/start-switchboard.ts';
import { databaseOptionsFromEnv } from '../store/database/database-options.ts';
import { pathExists } from '../shared/path-exists.ts';
import type { CredentialKind } from '../verify/preset-types.ts';

/** Left beside the token file by a start that created the first token but failed before showing it. */
export const TOKEN_UNSHOWN_FILE = `${TOKEN_FILE_NAME}.unshown`;

export const NO_PROVIDERS_HINT =
  'No providers are configured, so nothing is received. Add one to switchboard.yaml (README, "Configuration"), e.g.:\n' +
  '    providers:\n' +
  '      sandbox: { trust_mode: open }\n';

/** Rows of cells as left-aligned columns, each line indented. */
function table(rows: readonly (readonly string[])[], indent = '  '): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows
    .map((row) => `${indent}${row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ')}`.trimEnd())
    .join('\n');
}

/** What the banner calls each kind of credential: a public key is not a secret. */
const CREDENTIAL_WORDS: Record<CredentialKind, string> = {
  secret: 'secret',
  public_key: 'public key',
  token: 'token',
  none: 'credential',
};

function secretStatus(provider: ProviderConfig, unset: readonly UnsetVariable[]): string {
  if (provider.family === 'queue') return 'no check (queue)';
  if (provider.trustMode === 'open') return 'no check (open)';
  const what = CREDENTIAL_WORDS[provider.preset.credential];
  const count = provider.preset.credential === 'public_key' ? provider.publicKeys.length : provider.secrets.length;
  if (count > 0) return count === 1 ? `${what} set` : `${count} ${what}s set`;
  const variables = unsetPlaceholdersOf(provider.name, unset);
  return `NO ${what.toUpperCase()}${variables.length > 0 ? ` (${variables.join(', ')} not set)` : ''}: every delivery is rejected`;
}

function providerRows(providers: readonly ProviderConfig[], unset: readonly UnsetVariable[]): string[][] {
  return providers.map((p) => [
    p.name,
    p.family === 'queue' ? `redis ${p.mode} ${p.channel}` : `POST ${p.route}`,
    p.family === 'queue' ? 'queue' : p.trustMode === 'open' ? 'open' : `${p.trustMode} (${p.presetName})`,
    secretStatus(p, unset),
    p.enabled ? '' : '(disabled)',
  ]);
}

export function startupBanner(input: {
  config: ResolvedConfig & { unsetVariables?: readonly UnsetVariable[] };
  running: Pick<RunningSwitchboard, 'url' | 'mcpUrl'>;
}): string {
  const { config, running } = input;
  const unset = config.unsetVariables ?? [];
  const role = config.server.role;
  const lines =
    role === 'worker'
      ? [
          `switchboard listening on ${running.url}`,
          '  role:     worker (forward dispatch, search indexing, retention; serves /healthz and /metrics)',
          '',
        ]
      : [
          `switchboard listening on ${running.url}`,
          `  web UI:   ${running.url}/`,
          `  MCP:      ${running.mcpUrl}`,
          `  webhooks: ${running.url}/hooks/<provider>`,
          ...(role === 'ingest'
            ? ['  role:     ingest (forwarding, search indexing and retention run on worker processes)']
            : []),
          '',
        ];
  if (config.providers.length === 0) {
    lines.push(NO_PROVIDERS_HINT);
  } else {
    lines.push(`Providers (${config.providers.length}):`, table(providerRows(config.providers, unset)));
    const missing = config.providers.filter(
      (p) => p.family === 'webhook' && p.trustMode !== 'open' && p.secrets.length + p.publicKeys.length === 0,
    );
    if (missing.length > 0) {
      lines.push(`  Without a secret, rejecting every delivery: ${missing.map((p) => p.name).join(', ')}`);
    }
    lines.push('');
  }
  if (config.forward.length > 0) {
    const rows = config.forward.map((rule) => [
      rule.name,
      `→ ${rule.to}`,
      rule.providers === undefined ? 'every provider' : rule.providers.join(', '),
      rule.eventTypes === undefined ? '' : `types ${rule.eventTypes.join(', ')}`,
    ]);
    lines.push(`Forward rules (${config.forward.length}):`, table(rows), '');
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The first token is created early in start-up, and a start can still fail after that (a forward
 * rule refused, exit 2): the token file then exists and the next start finds a token, so it would
 * never be shown. A start that fails after creating the file leaves `<token file>.unshown`, and the
 * first start that serves shows the token and removes the mark.
 */
export async function firstTokenNotice(env: NodeJS.ProcessEnv): Promise<{
  shown(initial: InitialTokenResult): Promise<string>;
  failed(): Promise<void>;
}> {
  const { dataDir } = databaseOptionsFromEnv(env);
  const file = path.join(dataDir, TOKEN_FILE_NAME);
  const mark = path.join(dataDir, TOKEN_UNSHOWN_FILE);
  const existedBefore = await pathExists(file);
  return {
    shown: async (initial) => {
      const pending = await pathExists(mark);
      await rm(mark, { force: true });
      if (initial.created && initial.token !== undefined) {
        return `Created the first API token (shown once, also saved to ${initial.path}):\n  ${initial.token}\n\n`;
      }
      if (!pending) return '';
      const token = await readFile(file, 'utf8').then(
        (text) => text.trim(),
        () => '',
      );
      if (token === '') return '';
      return (
        `Created the first API token on an earlier start that stopped before serving, so it was not shown then.\n` +
        `It is saved in ${file}:\n  ${token}\n\n`
      );
    },
    failed: async () => {
      if (!existedBefore && (await pathExists(file))) await writeFile(mark, '', { mode: 0o600 });
    },
  };
}
