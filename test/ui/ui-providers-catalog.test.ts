/**
 * The Providers page in Chromium, on a real switchboard configured with every preset of the
 * catalog (PRESET_NAMES, so a preset added later is covered the day it is added): each one has its
 * card, with its preset, the trust badge of the mode it resolves to, and a test command that works
 * for it (`switchboard trigger` for every preset trigger can send, HTTP Basic included), or, for a
 * preset checked with a public key, a line saying why none can be made locally.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import { PRESET_NAMES } from '../../generated/constants.ts';
import type { TrustMode } from '../../generated/types.ts';
import { buildUi } from '../../src/ui/build-ui.ts';
import { trustLook } from '../../src/ui/client/trust.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';
import { everyCatalogProvider, isAsymmetric, resolvedTrustMode } from '../trigger/catalog-configs.ts';
import { browserUnavailableReason, launchBrowser, screenshot } from './browser.ts';

const TOKEN = 'ui-providers-catalog-token';
const unavailable = browserUnavailableReason();

describe.skipIf(unavailable !== null)('the Providers page with the whole catalog configured', () => {
  let composed: ComposedServer;
  let browser: Browser;
  let page: Page;
  let uiDir: string;
  const problems: string[] = [];

  beforeAll(async () => {
    uiDir = await mkdtemp(join(tmpdir(), 'switchboard-ui-catalog-'));
    await buildUi({ outDir: join(uiDir, 'dist') });
    composed = await startComposedServer({
      envToken: TOKEN,
      uiDistDir: join(uiDir, 'dist'),
      // JSON is YAML.
      config: JSON.stringify({ providers: everyCatalogProvider() }),
    });
    browser = await launchBrowser();
    const context = await browser.newContext({ colorScheme: 'light', viewport: { width: 1280, height: 900 } });
    await context.addInitScript((token) => sessionStorage.setItem('switchboard.token', token), TOKEN);
    page = await context.newPage();
    page.setDefaultTimeout(8000);
    page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await composed?.close();
    if (uiDir) await rm(uiDir, { recursive: true, force: true });
  });

  it('shows a card for every catalog preset, with its preset, its trust badge and a working test command', async () => {
    // A token provider's card loads its detail (the header a token goes in) before its command
    // settles; a signed one's says whether it is checked with a public key.
    const tokenPresets = PRESET_NAMES.filter((name) => resolvedTrustMode(name) === 'token');
    const detailed = PRESET_NAMES.filter((name) => ['token', 'signed'].includes(resolvedTrustMode(name)));
    const details = new Set<string>();
    page.on('response', (response) => {
      const match = /\/api\/providers\/([^/?]+)$/.exec(new URL(response.url()).pathname);
      if (match?.[1] !== undefined && response.ok()) details.add(decodeURIComponent(match[1]));
    });
    await page.goto(`${composed.running.url}/`);
    await page.click('nav a:has-text("Providers")');
    await page.waitForSelector('[data-provider]');
    const deadline = Date.now() + 20_000;
    while (!detailed.every((name) => details.has(name))) {
      if (Date.now() > deadline)
        throw new Error(`details never loaded: ${detailed.filter((n) => !details.has(n)).join(', ')}`);
      await page.waitForTimeout(50);
    }
    // The answers are in; the cards drop the header they show before (X-Webhook-Token, capitalised),
    // and a public-key one its command.
    const asymmetric = PRESET_NAMES.filter(isAsymmetric);
    expect(asymmetric).toEqual(expect.arrayContaining(['discord', 'sendgrid', 'telnyx']));
    await page.waitForFunction(
      ([tokens, publicKeys]) =>
        tokens.every(
          (n) =>
            !document.querySelector(`[data-provider="${n}"] .command-text`)?.textContent?.includes('X-Webhook-Token'),
        ) && publicKeys.every((n) => document.querySelector(`[data-provider="${n}"] .command-hint`) !== null),
      [tokenPresets, asymmetric] as const,
    );
    const cards = Object.fromEntries(
      await page.$$eval('[data-provider]', (all) =>
        all.map((card) => [
          card.getAttribute('data-provider') ?? '',
          {
            text: card.textContent ?? '',
            badge: card.querySelector('.badge-text')?.textContent ?? '',
            command: card.querySelector('.command-text')?.textContent ?? '',
            hint: card.querySelector('.command-hint')?.textContent ?? '',
          },
        ]),
      ),
    );
    expect(Object.keys(cards).sort()).toEqual([...PRESET_NAMES].sort());
    for (const name of PRESET_NAMES) {
      const card = cards[name];
      const mode = resolvedTrustMode(name) as TrustMode;
      expect(card?.text, name).toContain(`POST /hooks/${name}`);
      expect(card?.text, name).toMatch(new RegExp(`Preset${name}`));
      expect(card?.badge, name).toBe(mode === 'signed' ? 'Signed' : trustLook(mode, false).short);
      // Every preset trigger can send gets the trigger command; only a token preset with a token
      // header of its own and an open one get a curl line. A public-key one gets no command at all
      // (trigger would only say it cannot), but why, and what to do instead.
      const trigger = `switchboard trigger ${name} --url ${composed.running.url}`;
      // What is set, in a person's words (41.10): a public key is not a secret.
      if (isAsymmetric(name)) expect(card?.text, name).toContain('Public keyPublic key set');
      else if (mode === 'signed') expect(card?.text, name).toContain('SecretSecret set');
      if (isAsymmetric(name)) {
        expect(card?.command, name).toBe('');
        expect(card?.hint, name).toMatch(/cannot be triggered locally.*only the provider holds the private key/i);
        expect(card?.hint, name).toContain('replay a received event');
      } else {
        expect(card?.hint, name).toBe('');
        const tokenHeader = name === 'token' || PROVIDER_CATALOG[name].scheme.kind === 'token';
        if (mode === 'open' || tokenHeader) expect(card?.command, name).toMatch(/^curl /);
        else expect(card?.command, name).toBe(trigger);
      }
    }
    await screenshot(page, 'providers-catalog');
    expect(problems).toEqual([]);
  }, 60_000);

  it('shows no test command for a provider until its detail answers, so a public-key one never flashes one', async () => {
    // Hold every provider detail request until released: the page is then as it is on a slow link.
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = 0;
    await page.route(/\/api\/providers\/[^/?]+$/, async (route) => {
      held += 1;
      await released;
      // A request still held when a failed run moves on belongs to a page already gone.
      await route.continue().catch(() => undefined);
    });
    try {
      await page.goto(`${composed.running.url}/`);
      await page.click('nav a:has-text("Providers")');
      await page.waitForSelector('[data-provider]');
      const detailed = PRESET_NAMES.filter((name) => ['token', 'signed'].includes(resolvedTrustMode(name)));
      await page.waitForFunction((n) => document.querySelectorAll('.command-pending').length === n, detailed.length);
      expect(held).toBeGreaterThan(0);
      const shown = await page.$$eval('[data-provider]', (all) =>
        all
          .filter((card) => card.querySelector('.command-text') !== null)
          .map((card) => card.getAttribute('data-provider') ?? ''),
      );
      // Only the open preset, which needs no detail, has its command while the rest wait.
      expect(shown.sort()).toEqual(PRESET_NAMES.filter((name) => !detailed.includes(name)).sort());
      release();
      await page.waitForFunction(() => document.querySelectorAll('.command-pending').length === 0);
      expect(await page.$$eval('[data-provider="discord"] .command-text', (els) => els.length)).toBe(0);
      expect(await page.textContent('[data-provider="discord"] .command-hint')).toMatch(/cannot be triggered locally/i);
    } finally {
      release();
      await page.unroute(/\/api\/providers\/[^/?]+$/);
    }
    expect(problems).toEqual([]);
  }, 60_000);
});
