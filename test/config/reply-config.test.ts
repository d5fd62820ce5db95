/**
 * A provider's reply (config: reply) as start-up reads it: the preset's defaults from the catalog,
 * and a bad reply refused with a ConfigError (which the CLI turns into exit 2) naming the key.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import { REPLY_MAX_ANSWER_BYTES } from '../../generated/constants.ts';
import { errorOf } from './config-errors.ts';
import { parseConfig } from '../../src/config/load-config.ts';
import type { WebhookProviderConfig } from '../../src/config/resolve-config.ts';
import { deliveryWaits } from '../../src/verify/reply-waits.ts';
import { LazyBody } from '../../src/verify/identify.ts';

const KEY = 'a'.repeat(64);

function configWith(provider: string, forward = '  bot: { to: "http://127.0.0.1:3000/interactions" }'): string {
  return ['providers:', `  ${provider}`, 'forward:', forward, ''].join('\n');
}

describe('reply config', () => {
  it("takes the preset's timeout and fallback from the catalog, and the schema's answer cap", () => {
    const config = parseConfig(
      configWith(`discord: { preset: discord, public_key: "${KEY}", reply: { from: bot } }`),
      {},
    );
    const discord = config.providers[0] as WebhookProviderConfig;
    const data = PROVIDER_CATALOG.discord.reply;
    expect(discord.reply).toEqual({
      source: { kind: 'rule', rule: 'bot' },
      timeoutMs: data?.timeout_ms,
      fallback: {
        status: data?.fallback.status,
        contentType: data?.fallback.content_type,
        body: data?.fallback.body,
      },
      retry: false,
      maxAnswerBytes: REPLY_MAX_ANSWER_BYTES.default,
      waits: data?.waits,
    });
    expect(data?.timeout_ms).toBeLessThan(data?.deadline_ms ?? 0);
  });

  it('keeps a timeout and fallback of its own', () => {
    const config = parseConfig(
      configWith(
        'twilio: { preset: twilio, secret: t, public_url: "https://hooks.example.com/t", reply: { from: bot, timeout_ms: 5000, retry: true, fallback: { status: 200, content_type: text/xml, body: "<Response><Message>Busy</Message></Response>" } } }',
      ),
      {},
    );
    const twilio = config.providers[0] as WebhookProviderConfig;
    expect(twilio.reply).toMatchObject({
      timeoutMs: 5000,
      retry: true,
      fallback: { status: 200, contentType: 'text/xml', body: '<Response><Message>Busy</Message></Response>' },
      waits: 'all',
    });
  });

  it('refuses a rule that is not configured, naming the key and the nearest rule', () => {
    expect(errorOf(configWith(`discord: { preset: discord, public_key: "${KEY}", reply: { from: bto } }`))).toBe(
      'providers.discord.reply.from: no forward rule named bto; did you mean "bot"?',
    );
  });

  it('takes listen as the source, not a rule of that name', () => {
    const config = parseConfig(
      configWith(
        `discord: { preset: discord, public_key: "${KEY}", reply: { from: listen } }`,
        '  listen: { to: "http://127.0.0.1:3000/i" }',
      ),
      {},
    );
    expect((config.providers[0] as WebhookProviderConfig).reply?.source).toEqual({ kind: 'listen' });
  });

  it('refuses listen on a worker-only instance, which serves no stream for listen to follow', () => {
    expect(
      errorOf(
        [
          'server: { role: worker }',
          configWith(`lonely: { preset: discord, public_key: "${KEY}", reply: { from: listen } }`),
        ].join('\n'),
      ),
    ).toMatch(/^providers\.lonely\.reply\.from: listen needs the event stream .*server\.role worker/);
  });

  it('a reply from listen on a worker-only instance stops serve with exit 2, naming the key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sb-reply-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'sb.yaml');
    await writeFile(
      file,
      [
        'server: { role: worker }',
        configWith(`lonely: { preset: discord, public_key: "${KEY}", reply: { from: listen } }`),
      ].join('\n'),
    );
    let err = '';
    const code = await main(['serve', '--config', file], { out: () => undefined, err: (t) => (err += t) });
    expect(code).toBe(2);
    expect(err).toContain('providers.lonely.reply.from: listen');
  });

  it('a bad reply stops serve with exit 2, naming the key, without a stack trace', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sb-reply-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'sb.yaml');
    await writeFile(file, configWith('github: { preset: github, secret: s, reply: { from: bot } }'));
    let err = '';
    const code = await main(['serve', '--config', file], { out: () => undefined, err: (t) => (err += t) });
    expect(code).toBe(2);
    expect(err).toContain('providers.github.reply: preset github never waits for an answer');
    expect(err).not.toMatch(/\n\s+at /);
  });

  it("refuses a timeout over the provider's deadline", () => {
    expect(
      errorOf(configWith(`discord: { preset: discord, public_key: "${KEY}", reply: { from: bot, timeout_ms: 3500 } }`)),
    ).toMatch(/^providers\.discord\.reply\.timeout_ms: 3500 is over discord's deadline of 3000 ms/);
  });

  it('refuses reply on a preset that never waits for an answer', () => {
    expect(errorOf(configWith('github: { preset: github, secret: s, reply: { from: bot } }'))).toBe(
      'providers.github.reply: preset github never waits for an answer; remove reply',
    );
  });

  it('refuses a rule that does not take the provider, and an ordered rule', () => {
    expect(
      errorOf(
        configWith(
          `discord: { preset: discord, public_key: "${KEY}", reply: { from: bot } }\n  other: { trust_mode: open }`,
          '  bot: { to: "http://127.0.0.1:3000/i", providers: [other] }',
        ),
      ),
    ).toBe("providers.discord.reply.from: forward rule bot does not take provider discord's events");
    expect(
      errorOf(
        configWith(
          `discord: { preset: discord, public_key: "${KEY}", reply: { from: bot } }`,
          '  bot: { to: "http://127.0.0.1:3000/i", ordered: true }',
        ),
      ),
    ).toMatch(/^providers\.discord\.reply\.from: forward rule bot is ordered/);
  });

  it('refuses reply on a queue provider', () => {
    expect(errorOf(configWith('jobs: { family: queue, channel: jobs, reply: { from: bot } }'))).toContain(
      'providers.jobs.reply',
    );
  });
});

describe('which deliveries wait, from the catalog', () => {
  const waits = (preset: 'discord' | 'slack' | 'twilio', body: string): boolean => {
    const data = PROVIDER_CATALOG[preset].reply;
    if (data === undefined) throw new Error(`${preset} has no reply data`);
    return deliveryWaits(data.waits, new LazyBody(Buffer.from(body)));
  };

  it('Discord: interaction types 2 to 5 wait; PING and webhook events do not', () => {
    for (const type of [2, 3, 4, 5]) expect(waits('discord', JSON.stringify({ type }))).toBe(true);
    expect(waits('discord', '{"type":1}')).toBe(false);
    expect(waits('discord', '{"version":1,"type":1,"event":{"type":"APPLICATION_AUTHORIZED"}}')).toBe(false);
  });

  it('Slack: slash commands and interactivity wait; the Events API does not', () => {
    expect(waits('slack', 'command=%2Fdeploy&text=prod')).toBe(true);
    expect(waits('slack', `payload=${encodeURIComponent('{"type":"block_actions"}')}`)).toBe(true);
    expect(waits('slack', '{"type":"event_callback","event":{"type":"app_mention"}}')).toBe(false);
  });

  it('Twilio: every delivery waits', () => {
    expect(waits('twilio', 'MessageSid=SM1&Body=hi')).toBe(true);
  });

  it('presets without reply data never wait', () => {
    expect(PROVIDER_CATALOG.github.reply).toBeUndefined();
  });
});
