import { genericIdentity, LazyBody } from './identify.ts';
import type { Preset } from './preset-types.ts';
import { summarizeGeneric } from './summary.ts';

/**
 * No verification at all, for senders that cannot sign or carry a token (or for local testing).
 * The trust mode travels with every stored delivery, so consumers can tell these apart from
 * verified ones; nothing here is sensitive, so nothing is redacted.
 */
export const openPreset: Preset = {
  name: 'open',
  trustMode: 'open',
  credential: 'none',
  requiredHeaders: [],
  sensitiveHeaders: [],
  verify: () => ({ ok: true, detail: 'no verification: open provider' }),
  identify: (body, headers, parsed) => genericIdentity(parsed ?? new LazyBody(body), headers),
  summarize: summarizeGeneric,
};
