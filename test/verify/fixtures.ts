import { createRequire } from 'node:module';
import type { WebhookDefinition } from '@octokit/webhooks-examples';
import { expect } from 'vitest';
import { validateSwitchboardConfig } from '../../generated/validators.js';
import type { GenericHmacOptions } from '../../src/verify/engines/configured-hmac.ts';
import type { PresetName } from '../../generated/constants.ts';
import { usesUrl } from '../../src/verify/preset-options.ts';
import type { PresetOptions } from '../../src/verify/engines/engine.ts';
import { presetFor } from '../../src/verify/preset-registry.ts';
import type { HeaderBag, Preset, VerifyInput, VerifyOutcome } from '../../src/verify/preset-types.ts';

/** A fixed clock: 2025-01-15T12:00:00.250Z (the .250 checks that sub-second time is handled). */
export const NOW_MS = Date.UTC(2025, 0, 15, 12, 0, 0, 250);
export const NOW_S = Math.floor(NOW_MS / 1000);

export function input(
  body: Buffer,
  headers: HeaderBag,
  secrets: readonly string[],
  overrides: Partial<VerifyInput> = {},
): VerifyInput {
  return { body, headers, secrets, publicKeys: [], toleranceSeconds: 300, nowMs: NOW_MS, ...overrides };
}

/** generic-hmac options as config validation leaves them: the schema's defaults, then these. */
export function hmacOptions(options: Partial<GenericHmacOptions> & { header: string }): GenericHmacOptions {
  const probe: unknown = { providers: { probe: { preset: 'generic-hmac', hmac: { header: 'X-Probe' } } } };
  const defaults = validateSwitchboardConfig(probe) ? probe.providers?.['probe']?.hmac : undefined;
  if (defaults === undefined) throw new Error('the probe config no longer validates');
  return { ...defaults, ...(options as Partial<GenericHmacOptions>), header: options.header };
}

export type PresetFragment = Omit<PresetOptions, 'hmac'> & {
  hmac?: Partial<GenericHmacOptions> & { header: string };
};

/** presetFor with a config fragment, the way config resolution calls it (hmac defaults filled in). */
export function presetOf(options: PresetFragment): Preset {
  const { hmac, ...rest } = options;
  return presetFor({ ...rest, ...(hmac === undefined ? {} : { hmac: hmacOptions(hmac) }) });
}

/** Any preset by name, with the options it cannot be built without (hmac, a public URL). */
export function presetNamed(name: PresetName): Preset {
  if (name === 'generic-hmac') return presetOf({ preset: name, hmac: { header: 'X-Sig' } });
  return presetOf(usesUrl(name) ? { preset: name, public_url: 'https://hooks.example.com/hooks/x' } : { preset: name });
}

/** A copy with one byte changed, so the bytes differ from what was signed. */
export function flipByte(body: Buffer, index = Math.floor(body.length / 2)): Buffer {
  const copy = Buffer.from(body);
  copy[index] = (copy[index] ?? 0) ^ 0x01;
  return copy;
}

/** Bytes that are not valid UTF-8 (a lone continuation byte, an overlong form, 0xff). */
export const BINARY_BODY = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0xc0, 0xaf, 0x7b, 0x22, 0xed, 0xa0, 0x80, 0x0a, 0x01]);

const require = createRequire(import.meta.url);

/** GitHub's own example payloads (the package's main entry is a JSON file, so require it). */
export function githubDefinitions(): WebhookDefinition[] {
  return require('@octokit/webhooks-examples') as WebhookDefinition[];
}

export function githubExample(name: string, action?: string): unknown {
  const definition = githubDefinitions().find((d) => d.name === name);
  if (definition === undefined) throw new Error(`no ${name} example`);
  const example = (definition.examples as unknown[]).find(
    (e) =>
      action === undefined || (typeof e === 'object' && e !== null && (e as { action?: unknown }).action === action),
  );
  if (example === undefined) throw new Error(`no ${name}.${action ?? ''} example`);
  return example;
}

export function expectOk(outcome: VerifyOutcome): void {
  expect(outcome, outcome.detail).toMatchObject({ ok: true });
}

export function expectFail(outcome: VerifyOutcome, reason: string): void {
  expect(outcome).toMatchObject({ ok: false, reason });
}

/**
 * The detail line is stored and shown: it must not carry a secret or a signature. Secrets and
 * signature values (and the bare digests inside them) are checked, skipping very short fragments
 * that could occur by coincidence.
 */
export function expectNoLeak(
  outcome: VerifyOutcome,
  secrets: readonly string[],
  signatureValues: readonly string[],
): void {
  const fragments = [...secrets, ...signatureValues.flatMap(digestsIn)].filter((f) => f.length >= 8);
  for (const fragment of fragments) expect(outcome.detail).not.toContain(fragment);
  expect(outcome.detail).not.toMatch(/\n/);
}

/** A signature header value and every digest inside it (`sha256=<hex>`, `t=…,v1=…`, `v1,<b64> …`). */
function digestsIn(value: string): string[] {
  return [value, ...value.split(/[\s,=]+/)];
}
