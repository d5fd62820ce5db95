/**
 * What each catalog preset needs from config, refused at start-up with the key named: a preset
 * that signs the URL it is called at without public_url or server.public_url (exit 2 naming the
 * provider), a public_key or secret the scheme cannot use, HTTP Basic with half its credentials,
 * and keys the preset would ignore.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { errorOf } from './config-errors.ts';
import { parseConfig } from '../../src/config/load-config.ts';

describe('catalog preset keys at start-up', () => {
  it('a URL-signing preset without public_url or server.public_url exits 2 naming the provider', async () => {
    expect(errorOf('providers:\n  sms: { preset: twilio, secret: t }\n')).toMatch(
      /^providers\.sms\.public_url: provider sms \(preset twilio\) signs the URL it calls; set public_url or server\.public_url/,
    );
    const dir = await mkdtemp(join(tmpdir(), 'sb-keys-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'sb.yaml');
    await writeFile(file, 'providers:\n  payments: { preset: square, secret: s }\n');
    let err = '';
    const code = await main(['serve', '--config', file], { out: () => undefined, err: (t) => (err += t) });
    expect(code).toBe(2);
    expect(err).toContain('providers.payments.public_url: provider payments (preset square)');
    expect(err).not.toMatch(/\n\s+at /);
  });

  it('server.public_url plus the route is the URL when the provider sets none', () => {
    const config = parseConfig(
      'server:\n  public_url: https://hooks.example.com/\nproviders:\n  sms: { preset: twilio, secret: t }\n  q: { preset: upstash-qstash, secret: k, public_url: https://q.example.com/in }\n',
      {},
    );
    const url = (name: string) => config.providers.find((p) => p.name === name);
    expect(url('sms')).toMatchObject({ publicUrl: 'https://hooks.example.com/hooks/sms' });
    expect(url('q')).toMatchObject({ publicUrl: 'https://q.example.com/in' });
  });

  it('refuses a public_key or secret the scheme cannot use, naming the key', () => {
    expect(errorOf('providers:\n  d: { preset: discord, public_key: not-a-key }\n')).toMatch(
      /^providers\.d\.public_key: /,
    );
    expect(errorOf('providers:\n  a: { preset: adyen, secret: not-hex }\n')).toMatch(/^providers\.a\.secret: .*hex/);
    expect(errorOf('providers:\n  v: { preset: vonage, public_key: x }\n')).toMatch(/^providers\.v\.public_key: /);
  });

  it('HTTP Basic needs both username and password; other presets take neither', () => {
    expect(errorOf('providers:\n  b: { preset: basic-auth, username: u }\n')).toMatch(
      /^providers\.b\.password: basic auth needs both/,
    );
    expect(errorOf('providers:\n  p: { preset: postmark, secret: s }\n')).toMatch(/^providers\.p\.secret: /);
    expect(errorOf('providers:\n  g: { preset: github, username: u, password: p }\n')).toMatch(
      /^providers\.g\.username/,
    );
    expect(errorOf('providers:\n  g: { preset: github, secret: s, public_url: https://x.example.com }\n')).toMatch(
      /^providers\.g\.public_url: preset github does not sign the URL/,
    );
  });
});
