/**
 * No verification at all, for senders that cannot sign or carry a token (or for local testing).
 * The trust mode travels with every stored delivery, so consumers can tell these apart from
 * verified ones; nothing here is sensitive, so nothing is redacted.
 */
import { defineEngine } from './engine.ts';

export const openEngine = defineEngine<'open'>({
  kind: 'open',
  credentialKeys: [],
  build: () => ({
    requiredHeaders: [],
    sensitiveHeaders: [],
    verify: () => ({ ok: true, detail: 'no verification: open provider' }),
  }),
  docs: { scheme: () => 'nothing checked', headers: () => '—', timestamped: () => false },
});
