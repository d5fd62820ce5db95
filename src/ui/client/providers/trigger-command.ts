import { SERVER_HOST, SERVER_PORT } from '../../../../generated/constants.ts';
import type { ProviderStatus } from '../../../../generated/types.ts';

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
