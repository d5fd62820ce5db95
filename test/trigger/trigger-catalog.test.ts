/**
 * `switchboard trigger` for the whole catalog, on the wire. The presets come from the catalog
 * (PRESET_NAMES), not from a list written here, so a preset added later is covered the day it is
 * added: every preset with a shared credential (a secret, a token, HTTP Basic) sends a sample
 * through the real CLI to a real server on 127.0.0.1, which stores it having passed its check;
 * every public-key preset prints why switchboard cannot sign for it, exits 2 and sends nothing.
 * Where a catalog case exists, the provider's own verifier (its package, or its documented scheme)
 * accepts the very request trigger made.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRESET_NAMES, type PresetName } from '../../generated/constants.ts';
import { main } from '../../src/cli/main.ts';
import { listSamples } from '../../src/verify/sample-deliveries.ts';
import { prepareTrigger, triggerSample } from '../../src/trigger/trigger-sample.ts';
import { startHarness, type Harness } from '../ingest/ingest-harness.ts';
import { ALL_CASES } from '../verify/providers/all-cases.ts';
import { configFor, isAsymmetric, resolvedTrustMode } from './catalog-configs.ts';
import { closedPort } from '../support/local-server.ts';
import { providersFrom, webhookProvider } from '../support/providers.ts';

const asymmetric = (preset: PresetName): boolean => isAsymmetric(preset);

const SENDABLE = PRESET_NAMES.filter((p) => !asymmetric(p));
const ASYMMETRIC = PRESET_NAMES.filter(asymmetric);

/** A YAML config file (JSON is YAML) with these providers, for the CLI. */
async function configFile(dir: string, presets: readonly PresetName[]): Promise<string> {
  const file = join(dir, `${presets.length}.yaml`);
  await writeFile(file, JSON.stringify({ providers: Object.fromEntries(presets.map((p) => [p, configFor(p)])) }));
  return file;
}

function capture() {
  let out = '';
  let err = '';
  return {
    io: { out: (t: string) => void (out += t), err: (t: string) => void (err += t) },
    out: () => out,
    err: () => err,
  };
}

describe('switchboard trigger for every catalog preset', () => {
  let harness: Harness;
  let dir: string;

  beforeAll(async () => {
    harness = await startHarness({ providers: Object.fromEntries(SENDABLE.map((p) => [p, configFor(p)])) });
    dir = await mkdtemp(join(tmpdir(), 'sb-trigger-catalog-'));
  });

  afterAll(async () => {
    await harness?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('covers the whole catalog: a preset is either sendable or public-key, and every sendable one has a sample', () => {
    expect(SENDABLE.length + ASYMMETRIC.length).toBe(PRESET_NAMES.length);
    expect(SENDABLE).toEqual(expect.arrayContaining(['basic-auth', 'postmark', 'chargebee', 'twilio', 'token']));
    expect(ASYMMETRIC).toEqual(expect.arrayContaining(['discord', 'sendgrid', 'telnyx']));
    expect(SENDABLE.filter((name) => listSamples(name).length === 0)).toEqual([]);
    expect(ASYMMETRIC.filter((name) => listSamples(name).length > 0)).toEqual([]);
  });

  for (const preset of SENDABLE) {
    it(`${preset}: \`switchboard trigger\` sends a sample that the server stores as having passed its check`, async () => {
      const file = await configFile(dir, [preset]);
      const c = capture();
      const code = await main(['trigger', preset, '--config', file, '--url', harness.url], c.io);
      expect(code, c.out() + c.err()).toBe(0);
      const printed = /: 200 (\{.*\})\n$/.exec(c.out());
      expect(printed, c.out()).not.toBeNull();
      const { id } = JSON.parse(printed?.[1] ?? '{}') as { id: string };
      const stored = await harness.store.get(id);
      const trustMode = resolvedTrustMode(preset);
      // An open preset checks nothing; every other one passed its own check (verified, for signed ones).
      expect(stored, preset).toMatchObject({
        provider: preset,
        trustMode,
        passedCheck: trustMode === 'open' ? null : true,
        verified: trustMode === 'signed',
      });
    });
  }

  for (const preset of ASYMMETRIC) {
    it(`${preset}: \`switchboard trigger\` prints why it cannot sign for a public-key preset, and sends nothing`, async () => {
      const file = await configFile(dir, [preset]);
      const port = await closedPort();
      const c = capture();
      expect(await main(['trigger', preset, '--config', file, '--url', `http://127.0.0.1:${port}`], c.io)).toBe(2);
      expect(c.out()).toBe('');
      expect(c.err()).toMatch(
        new RegExp(
          `^switchboard: provider ${preset} \\(preset ${preset}\\) checks an? [\\w -]+ signature with the provider's public key; ` +
            'only the provider holds the private key, so switchboard cannot sign a sample for it\\. ' +
            "Send a test event from the provider's dashboard instead, or replay a stored one",
        ),
      );
    });
  }

  for (const c of ALL_CASES.filter((k) => !asymmetric(k.preset))) {
    it(`${c.preset}: the provider's own verifier accepts the sample trigger makes`, async () => {
      const provider = webhookProvider(providersFrom({ [c.preset]: configFor(c.preset) }), c.preset);
      const prepared = prepareTrigger(provider, undefined, Date.now());
      expect(await c.accepts({ body: prepared.body, headers: prepared.headers }, c.secret)).toBe(true);
      expect(await c.accepts({ body: prepared.body, headers: prepared.headers }, c.wrongSecret)).toBe(false);
    });
  }

  it('standard-webhooks family members configured with whpk_ keys only cannot be triggered either', async () => {
    const whpk = `whpk_${Buffer.alloc(32, 7).toString('base64')}`;
    const provider = webhookProvider(providersFrom({ clerk: { preset: 'clerk', public_key: whpk } }), 'clerk');
    expect(() => prepareTrigger(provider, undefined, Date.now())).toThrow(/a v1a Ed25519 signature/);
    await expect(triggerSample({ provider, baseUrl: 'http://127.0.0.1:9' })).rejects.toThrow(/cannot sign a sample/);
  });
});
