/**
 * Forwarding in the web UI, in a real Chromium against the composed server (PostgreSQL, the
 * dispatcher, real consumers on 127.0.0.1): the list row's mark, the detail's Forwarding tab with
 * each rule's attempts and a manual retry, and the Forwards page with pause, resume and retry-dead,
 * at desktop and phone sizes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildUi } from '../../src/ui/build-ui.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';
import { closedPort, startConsumer, type Consumer } from '../support/local-server.ts';
import { browserUnavailableReason, launchBrowser, screenshot } from './browser.ts';

const TOKEN = 'ui-forwarding-token';
const unavailable = browserUnavailableReason();

/** The consumer of the failing rule answers 500 with a JSON body until told otherwise. */
const failWith500 = (_req: unknown, res: import('node:http').ServerResponse): void => {
  res.statusCode = 500;
  res.setHeader('Content-Type', 'application/json');
  res.end('{"error":"consumer crashed: TypeError at handler.js:12"}');
};

describe.skipIf(unavailable !== null)('forwarding in the web UI', () => {
  let app: Consumer;
  let flaky: Consumer;
  let composed: ComposedServer;
  let browser: Browser;
  let page: Page;
  let uiDir: string;
  const problems: string[] = [];

  const send = async (type: string): Promise<string> => {
    const response = await fetch(`${composed.running.url}/hooks/hooks`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ type, n: Math.random() }),
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { id: string }).id;
  };

  const api = async <T>(path: string): Promise<T> => {
    const response = await fetch(`${composed.running.url}${path}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    return (await response.json()) as T;
  };

  /** Waits (polling the API, not the page) until the event's deliveries are all in these states. */
  const settle = async (id: string, states: Record<string, string>): Promise<void> => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const { deliveries } = await api<{ deliveries: { rule: string; state: string }[] }>(
        `/api/events/${id}/deliveries`,
      );
      const now = Object.fromEntries(deliveries.map((d) => [d.rule, d.state]));
      if (JSON.stringify(now, Object.keys(states).sort()) === JSON.stringify(states, Object.keys(states).sort()))
        return;
      if (Date.now() > deadline)
        throw new Error(`deliveries of ${id} are ${JSON.stringify(now)}, not ${JSON.stringify(states)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  beforeAll(async () => {
    uiDir = await mkdtemp(join(tmpdir(), 'switchboard-ui-forwarding-'));
    await buildUi({ outDir: join(uiDir, 'dist') });
    app = await startConsumer('127.0.0.1');
    flaky = await startConsumer('127.0.0.1', failWith500);
    composed = await startComposedServer({
      envToken: TOKEN,
      uiDistDir: join(uiDir, 'dist'),
      config: [
        'providers:',
        '  hooks: { trust_mode: open, event_type_from: /type }',
        '  relay: { trust_mode: token, token: relay-token-0123456789, event_type_from: /type }',
        'forward:',
        `  local-app: { to: "${app.url('/webhooks')}" }`,
        // Takes forged relay events too: they go out unsigned.
        `  unverified-app: { to: "${app.url('/unverified')}", providers: [relay], include_unverified: true }`,
        // Nothing listens: its deliveries keep failing and wait a minute between attempts.
        `  retry-app: { to: "http://127.0.0.1:${await closedPort()}/down", event_types: [retry], backoff: { initial_ms: 60000, max_ms: 60000 } }`,
        `  flaky-app: { to: "${flaky.url('/hooks?key=s3cret')}", event_types: [order], max_attempts: 2, backoff: { initial_ms: 50, max_ms: 100 } }`,
        '',
      ].join('\n'),
    });
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await composed?.close();
    await app?.close();
    await flaky?.close();
    if (uiDir) await rm(uiDir, { recursive: true, force: true });
  });

  async function openPage(viewport: { width: number; height: number }, hash: string): Promise<Page> {
    const context = await browser.newContext({ colorScheme: 'light', viewport });
    await context.addInitScript((token) => sessionStorage.setItem('switchboard.token', token), TOKEN);
    const opened = await context.newPage();
    opened.setDefaultTimeout(8000);
    opened.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
    opened.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
    });
    await opened.goto(`${composed.running.url}/${hash}`);
    await opened.waitForSelector('.topbar');
    return opened;
  }

  it('marks each row delivered or failed, and the detail shows every rule with its attempts and the consumer answer', async () => {
    const delivered = await send('ping');
    const failing = await send('order.created');
    const retrying = await send('retry');
    // A forged delivery: answered 401, and stored (record_rejected is the default) as failing its check.
    const forgedResponse = await fetch(`${composed.running.url}/hooks/relay`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Webhook-Token': 'not-the-token' },
      body: JSON.stringify({ type: 'deploy' }),
    });
    expect(forgedResponse.status).toBe(401);
    const forged = (await api<{ events: { id: string }[] }>('/api/events?provider=relay')).events[0]?.id ?? '';
    await settle(delivered, { 'local-app': 'delivered' });
    await settle(failing, { 'local-app': 'delivered', 'flaky-app': 'dead' });
    await settle(retrying, { 'local-app': 'delivered', 'retry-app': 'failed' });
    await settle(forged, { 'unverified-app': 'delivered' });

    page = await openPage({ width: 1440, height: 900 }, '#/events');
    await page.waitForSelector(`[data-event-id="${failing}"] [data-forward-state]`);
    expect(await page.getAttribute(`[data-event-id="${delivered}"] [data-forward-state]`, 'data-forward-state')).toBe(
      'delivered',
    );
    // Dead and retrying look different, and neither looks like the other.
    const markOf = async (id: string) =>
      page.$eval(`[data-event-id="${id}"] .fwd-mark`, (el) => ({
        state: el.getAttribute('data-forward-state'),
        label: el.getAttribute('aria-label'),
        glyph: el.textContent,
        tone: (el.getAttribute('class') ?? '').split(' ').find((c: string) => c.startsWith('fwd-') && c !== 'fwd-mark'),
        color: getComputedStyle(el).color,
        border: getComputedStyle(el).borderStyle,
      }));
    await page.waitForSelector(`[data-event-id="${forged}"] [data-forward-state]`);
    const [ok, dead, retry, unsigned] = await Promise.all([delivered, failing, retrying, forged].map(markOf));
    expect(dead).toMatchObject({
      state: 'dead',
      label: 'Forwarding dead: retry it by hand',
      glyph: '!',
      tone: 'fwd-bad',
    });
    expect(retry).toMatchObject({
      state: 'failed',
      label: 'Forwarding failed, retrying',
      glyph: '↻',
      tone: 'fwd-warn',
    });
    expect(retry?.color).not.toBe(dead?.color);
    // A forged event an include_unverified rule delivered: not the plain green check.
    expect(ok).toMatchObject({ state: 'delivered', glyph: '✓', tone: 'fwd-good', border: 'solid' });
    expect(unsigned).toMatchObject({ state: 'delivered_unsigned', tone: 'fwd-unsigned', border: 'dashed' });
    expect(unsigned?.label).toMatch(/sent unsigned/);
    expect(unsigned?.color).not.toBe(ok?.color);
    expect(app.requests.find((r) => r.url === '/unverified')?.headers['x-webhook-token']).toBeUndefined();

    await page.click(`[data-event-id="${failing}"]`);
    await page.click('[role="tab"]:has-text("Forwarding")');
    await page.waitForSelector('[data-delivery-rule="flaky-app"]');
    const flakyCard = page.locator('[data-delivery-rule="flaky-app"]');
    expect(await flakyCard.getAttribute('data-delivery-state')).toBe('dead');
    expect(await flakyCard.locator('[data-testid="delivery-state"]').textContent()).toBe('Dead');
    expect(await flakyCard.locator('tbody tr').count()).toBe(2);
    expect(await flakyCard.locator('[data-testid="response-excerpt"] pre').textContent()).toContain(
      'consumer crashed: TypeError',
    );
    expect(await flakyCard.locator('[data-testid="response-content-type"]').textContent()).toBe('application/json');
    expect(await page.getAttribute('[data-delivery-rule="local-app"]', 'data-delivery-state')).toBe('delivered');
    await screenshot(page, 'forwarding-detail-dead');

    // The consumer is fixed; a manual retry delivers it, and the tab follows without a reload.
    flaky.handle((_req, res) => res.end('ok'));
    await flakyCard.locator('[data-testid="retry-delivery"]').click();
    await page.waitForSelector('[data-delivery-rule="flaky-app"][data-delivery-state="delivered"]', {
      timeout: 10_000,
    });
    expect(await flakyCard.locator('tbody tr').count()).toBe(3);
    const lastRequest = flaky.requests.at(-1);
    expect(lastRequest?.headers['x-switchboard-attempt']).toBe('3');
    await page.close();
  });

  it('the Forwards page shows each rule’s health, pauses and resumes it, and retries its dead deliveries', async () => {
    flaky.handle(failWith500);
    const dead = await send('order.paid');
    await settle(dead, { 'local-app': 'delivered', 'flaky-app': 'dead' });

    page = await openPage({ width: 1440, height: 900 }, '#/forwards');
    const card = page.locator('[data-rule="flaky-app"]');
    await card.waitFor();
    await page.waitForFunction(
      () => document.querySelector('[data-rule="flaky-app"] [data-testid="rule-dead"]')?.textContent === '1',
    );
    expect(await card.locator('[data-testid="rule-state"]').textContent()).toBe('Has dead deliveries');
    expect(await card.locator('[data-testid="rule-last-error"]').textContent()).toMatch(/500/);
    // The consumer's query string may hold its token: the page shows it as ?…, never the value.
    expect(await card.locator('.facts dd').first().textContent()).toBe(`${flaky.url('/hooks')}?…`);
    expect(await page.content()).not.toContain('s3cret');
    expect(await page.locator('[data-rule="local-app"] [data-testid="rule-state"]').textContent()).toBe('Healthy');
    // Health from what stands now: a delivery waiting for its retry.
    expect(await page.locator('[data-rule="retry-app"] [data-testid="rule-state"]').textContent()).toBe('Retrying');
    expect(await page.locator('[data-rule="retry-app"] [data-testid="rule-pending"]').textContent()).toBe(
      '1 (1 retrying)',
    );
    await screenshot(page, 'forwarding-page');

    // Pause: the rule says so, and a new event waits instead of being sent.
    await page.locator('[data-rule="local-app"] [data-testid="pause"]').click();
    await page.waitForSelector('[data-rule="local-app"] [data-testid="resume"]');
    expect(await page.locator('[data-rule="local-app"] [data-testid="rule-state"]').textContent()).toBe('Paused');
    const waiting = await send('ping');
    const before = app.requests.length;
    await page.waitForFunction(
      () => document.querySelector('[data-rule="local-app"] [data-testid="rule-pending"]')?.textContent === '1',
    );
    expect(app.requests.length).toBe(before);
    await page.locator('[data-rule="local-app"] [data-testid="resume"]').click();
    await settle(waiting, { 'local-app': 'delivered' });
    await page.waitForSelector('[data-rule="local-app"] [data-testid="pause"]');

    // Retry dead: the fixed consumer gets the dead one, and the count goes back to 0.
    flaky.handle((_req, res) => res.end('ok'));
    await card.locator('[data-testid="retry-dead"]').click();
    await page.waitForSelector('[data-rule="flaky-app"] [role="status"]');
    expect(await card.locator('[role="status"]').textContent()).toBe('1 dead delivery queued again.');
    await settle(dead, { 'local-app': 'delivered', 'flaky-app': 'delivered' });
    await page.waitForFunction(
      () => document.querySelector('[data-rule="flaky-app"] [data-testid="rule-dead"]')?.textContent === '0',
    );
    expect(await card.locator('[data-testid="retry-dead"]').isDisabled()).toBe(true);
    // The consumer recovered: its last error still shows, but the rule is healthy, not "Retrying".
    await page.waitForFunction(
      () => document.querySelector('[data-rule="flaky-app"] [data-testid="rule-state"]')?.textContent === 'Healthy',
    );
    expect(await card.locator('[data-testid="rule-last-error"]').textContent()).toMatch(/500/);
    await page.close();
  });

  it('fits a phone screen', async () => {
    page = await openPage({ width: 390, height: 844 }, '#/forwards');
    await page.waitForSelector('[data-rule="flaky-app"]');
    await screenshot(page, 'forwarding-page-mobile');
    // Whatever sticks out past the screen's right edge, named so a failure says what to fix.
    const overflowing = await page.evaluate(() =>
      Array.from(document.querySelectorAll('body *'))
        .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1)
        .map((el) => `${el.tagName.toLowerCase()}.${el.getAttribute('class') ?? ''}`),
    );
    expect(overflowing).toEqual([]);
    await page.close();
  });

  it('ran without script errors or console errors', () => {
    expect(problems).toEqual([]);
  });
});
