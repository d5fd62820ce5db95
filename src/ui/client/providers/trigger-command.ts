import { SERVER_HOST, SERVER_PORT } from '../../../../generated/constants.ts';
import type { ApiProviderDetail, ProviderStatus } from '../../../../generated/types.ts';
import { INSTALLED_CLI } from '../cli-command.ts';

/** Where `switchboard trigger` sends unless given --url: the address switchboard binds by default. */
const DEFAULT_BASE = `http://${SERVER_HOST.default}:${SERVER_PORT.default}`;
/** The variable a token command reads when the config names none (its token is written in the file). */
const FALLBACK_TOKEN_VARIABLE = 'WEBHOOK_TOKEN';
const SAMPLE = '{"type":"test.event","hello":"switchboard"}';

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** How a token provider takes its token, from GET /api/providers/{name}. */
export type TokenSource = Pick<ApiProviderDetail, 'token_header' | 'token_variable'>;

/**
 * The command that sends this provider a test event, as a user would paste it into a shell: `cli`
 * is how switchboard's CLI runs there (cli-command.ts). A token travels as "$VAR" in double quotes,
 * so the shell expands it: VAR is the config's own `${VAR}` when it has one.
 */
export function triggerCommand(p: ProviderStatus, origin: string, cli = INSTALLED_CLI, token?: TokenSource): string {
  const base = origin === DEFAULT_BASE ? '' : ` --url ${origin}`;
  if (p.family === 'queue') {
    return p.mode === 'streams'
      ? `redis-cli XADD ${p.channel ?? p.name} '*' payload ${shellQuote(SAMPLE)}`
      : `redis-cli PUBLISH ${p.channel ?? p.name} ${shellQuote(SAMPLE)}`;
  }
  // A token preset the server names no token header for (HTTP Basic: basic-auth, postmark,
  // chargebee) makes its header from its credentials, which `switchboard trigger` does.
  const headerless = p.trust_mode === 'token' && token !== undefined && token.token_header === undefined;
  if (p.trust_mode === 'signed' || headerless) return `${cli} trigger ${p.name}${base}`;
  const header =
    p.trust_mode === 'token'
      ? ` -H "${token?.token_header ?? 'X-Webhook-Token'}: $${token?.token_variable ?? FALLBACK_TOKEN_VARIABLE}"`
      : '';
  return `curl -X POST ${origin}${p.route ?? `/hooks/${p.name}`} -H 'Content-Type: application/json'${header} -d ${shellQuote(SAMPLE)}`;
}
