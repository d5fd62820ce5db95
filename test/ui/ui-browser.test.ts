/**
 * The web UI in a real Chromium against a real switchboard (PostgreSQL, event bus, replay), with
 * webhooks sent the way `switchboard trigger` sends them. Screenshots land in
 * test-results/screenshots/.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListWebhookEventsOutput } from '../../generated/types.ts';
import type { NewEvent } from '../../src/store/index.ts';
import { buildUi } from '../../src/ui/build-ui.ts';
import { startApiTestServer, type ApiTestServer } from '../api/api-test-server.ts';
import { answerWith, startConsumer, type Consumer } from '../support/local-server.ts';
import { call, getJson, sendBadlySignedGithub, sendOpen, sendSignedGithub, sendToken } from '../api/http-helpers.ts';
import { formatBytes } from '../../src/ui/client/format.ts';
import { browserUnavailableReason, launchBrowser, screenshot } from './browser.ts';

const unavailable = browserUnavailableReason();
const inCi = process.env.CI === 'true';
if (unavailable !== null && !inCi) process.stdout.write(`${unavailable}\n`);

if (unavailable !== null && inCi) {
  describe('browser tests in CI', () => {
    it('have Chromium at /usr/bin/chromium', () => {
      throw new Error(`${unavailable}; CI must install it (.ci/run)`);
    });
  });
}

describe.skipIf(unavailable !== null)('web UI in Chromium', () => {
  let tmp: string;
  let server: ApiTestServer;
  let consumer: Consumer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  const authHeaders: (string | undefined)[] = [];
  const ids: Record<string, string> = {};

  const row = (id: string): string => `[data-event-id="${id}"]`;

  async function openEvent(id: string): Promise<void> {
    await page.click(row(id));
    await page.waitForSelector(`#detail-title`);
    await page.waitForFunction((eventId) => location.hash === `#/events/${eventId}`, id);
    await page.waitForSelector('[data-testid="trust-panel"]');
  }

  async function visibleRowIds(): Promise<string[]> {
    return page.$$eval('[data-event-id]', (els) => els.map((e) => e.getAttribute('data-event-id') ?? ''));
  }

  /** Waits until the list shows exactly these events (the previous filter's rows may linger until the answer arrives). */
  async function waitForRows(expected: readonly (string | undefined)[]): Promise<void> {
    await page.waitForFunction(
      (want) =>
        JSON.stringify(
          Array.from(document.querySelectorAll('[data-event-id]')).map((e) => e.getAttribute('data-event-id')),
        ) === JSON.stringify(want),
      expected,
    );
  }

  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'switchboard-ui-browser-'));
    await buildUi({ outDir: join(tmp, 'dist') });
    consumer = await startConsumer('127.0.0.1', answerWith(202));
    server = await startApiTestServer({ defaultTarget: consumer.url(), uiDistDir: join(tmp, 'dist') });
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
    page = await context.newPage();
    // Fail an action with playwright's own message (which selector) well before the test timeout.
    page.setDefaultTimeout(8000);
    page.on('console', (msg) => {
      // Chromium logs every non-2xx fetch and every cut response; provoked on purpose here: the
      // 401 (wrong token), the 502 (unreachable replay target) and the dropped event stream.
      const provoked = /status of (401|502) |ERR_INCOMPLETE_CHUNKED_ENCODING/;
      if (msg.type() === 'error' && !provoked.test(msg.text())) problems.push(`console: ${msg.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
    page.on('request', (req) => {
      if (new URL(req.url()).pathname.startsWith('/api/')) authHeaders.push(req.headers()['authorization']);
    });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await server?.close();
    await consumer?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('first load in the browser is small and sets no cookie', async () => {
    let transferred = 0;
    const onFinished = async (req: import('playwright-core').Request): Promise<void> => {
      const sizes = await req.sizes().catch(() => null);
      if (sizes) transferred += sizes.responseBodySize + sizes.responseHeadersSize;
    };
    page.on('requestfinished', (req) => void onFinished(req));
    await page.goto(`${server.url}/`, { waitUntil: 'networkidle' });
    page.removeAllListeners('requestfinished');
    process.stdout.write(`ui first load in Chromium: ${transferred} bytes transferred\n`);
    expect(transferred).toBeGreaterThan(0);
    expect(transferred).toBeLessThan(200 * 1024);
    expect(await context.cookies()).toEqual([]);
  });

  it('sign-in asks for the token once, keeps it in sessionStorage and sends it as a bearer header', async () => {
    await page.waitForSelector('h1#signin-title');
    await screenshot(page, '01-sign-in');
    await page.fill('#token', 'sbt_wrong');
    await page.click('button[type=submit]');
    await page.waitForSelector('#signin-error');
    expect(await page.textContent('#signin-error')).toMatch(/not accepted/);
    await screenshot(page, '02-sign-in-error');

    await page.fill('#token', server.token);
    await page.click('button[type=submit]');
    await page.waitForSelector('.topbar');
    await page.waitForSelector('[data-live="live"]');
    expect(await page.evaluate(() => sessionStorage.getItem('switchboard.token'))).toBe(server.token);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(await context.cookies()).toEqual([]);

    // Not networkidle: the live stream keeps a request open for good.
    await page.reload({ waitUntil: 'load' });
    await page.waitForSelector('.topbar');
    expect(await page.$('#token')).toBeNull();
    const sent = authHeaders.filter((h) => h !== undefined);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.at(-1)).toBe(`Bearer ${server.token}`);
    expect(await page.textContent('.live')).toMatch(/Live/);
  });

  it('a webhook sent with the trigger logic appears live within a second', async () => {
    await page.waitForSelector('[data-live="live"]');
    const sending = Date.now();
    const { id } = await sendSignedGithub(server);
    // Measured from the moment switchboard acknowledged (committed) the delivery.
    const committed = Date.now();
    ids['github'] = id;
    await page.waitForSelector(row(id), { timeout: 1000 });
    const elapsed = Date.now() - committed;
    process.stdout.write(`live event visible ${elapsed} ms after commit (${Date.now() - sending} ms after sending)\n`);
    expect(elapsed).toBeLessThan(1000);
    expect(await page.getAttribute(`${row(id)} [data-trust]`, 'data-trust')).toBe('verified');
    await screenshot(page, '03-live-event');
  });

  it('shows signed-and-verified unmistakably apart from unverified events', async () => {
    ids['token'] = await sendToken(server, { type: 'deploy.finished', service: 'api', zanzibar: true });
    ids['open'] = await sendOpen(server, JSON.stringify({ type: 'ping', note: 'nothing to find here' }));
    ids['failed'] = await sendBadlySignedGithub(server);
    for (const key of ['token', 'open', 'failed']) await page.waitForSelector(row(ids[key] ?? ''));
    const trustOf = (key: string): Promise<string | null> =>
      page.getAttribute(`${row(ids[key] ?? '')} [data-trust]`, 'data-trust');
    expect(await trustOf('github')).toBe('verified');
    expect(await trustOf('token')).toBe('token');
    expect(await trustOf('open')).toBe('open');
    expect(await trustOf('failed')).toBe('failed');
    await screenshot(page, '04-list-badges');

    await openEvent(ids['github'] ?? '');
    expect(await page.textContent('[data-testid="trust-panel"] .badge')).toBe('Verified signature');
    expect(await page.textContent('[data-testid="verify-detail"]')).toMatch(/valid/);
    await screenshot(page, '05-detail-verified');

    await openEvent(ids['token'] ?? '');
    expect(await page.textContent('[data-testid="trust-panel"] .badge')).toBe('Unverified — shared token');
    await screenshot(page, '06-detail-unverified-token');

    await openEvent(ids['failed'] ?? '');
    expect(await page.textContent('[data-testid="trust-panel"] .badge')).toBe('Signature failed');
    await screenshot(page, '07-detail-signature-failed');

    await openEvent(ids['open'] ?? '');
    expect(await page.textContent('[data-testid="trust-panel"] .badge')).toBe('Unverified — open endpoint');
  });

  it('shows that a large rejected delivery was stored truncated', async () => {
    const body = Buffer.from(JSON.stringify({ action: 'opened', filler: 'x'.repeat(100 * 1024) }));
    const res = await call(server, '/hooks/github', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issues',
        'x-hub-signature-256': `sha256=${'0'.repeat(64)}`,
      },
      body,
      token: null,
    });
    expect(res.status).toBe(401);
    const listed = await getJson<ListWebhookEventsOutput>(server, '/api/events?provider=github&verified=false&limit=1');
    const id = listed.events[0]?.id ?? '';
    await page.waitForSelector(row(id));
    await openEvent(id);
    await page.waitForSelector('[data-testid="payload-truncated"]');
    expect(await page.textContent('[data-testid="payload-truncated"]')).toContain(
      `Only the first ${formatBytes(65536)} of the ${formatBytes(body.length)} that arrived were stored`,
    );
    expect(await page.textContent('.meta-strip')).toContain(`of ${formatBytes(body.length)} received`);
    await page.locator('[data-testid="payload-truncated"]').scrollIntoViewIfNeeded();
    await screenshot(page, '07b-detail-truncated-reject');
    // The replay panel of this forged event offers only an unsigned send as well.
    expect(await page.$('[data-testid="replay-unsigned-rule"]')).not.toBeNull();
  });

  it('filters by provider, verification and payload text', async () => {
    await page.selectOption('#f-provider', 'ci');
    await waitForRows([ids['token']]);
    await screenshot(page, '08-filter-provider');

    await page.selectOption('#f-provider', '');
    await page.selectOption('#f-verified', 'true');
    await waitForRows([ids['github']]);

    // A live event that does not match stays out; one that does comes in.
    const unverified = await sendToken(server, { type: 'deploy.started' });
    const { id: verified } = await sendSignedGithub(server, 'pull_request');
    await page.waitForSelector(row(verified));
    expect(await visibleRowIds()).not.toContain(unverified);

    await page.selectOption('#f-verified', '');
    await page.fill('#f-q', 'zanzibar');
    await waitForRows([ids['token']]);
    await screenshot(page, '09-filter-search');
    await page.click('text=Clear');
    await page.waitForSelector(row(unverified));
  });

  it('moves through the list with j/k and opens with Enter', async () => {
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => location.hash === '#/events');
    const order = await visibleRowIds();
    // Selection carries on from the event opened last (or starts above the first row).
    const start = order.indexOf(
      await page.evaluate(() => document.querySelector('[aria-selected="true"]')?.getAttribute('data-event-id') ?? ''),
    );
    let position = start;
    for (const key of 'jjjk')
      position = key === 'j' ? Math.min(order.length - 1, position + 1) : Math.max(0, position - 1);
    const expected = order[position];
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    await page.keyboard.press('k');
    const selected = await page.getAttribute('[aria-selected="true"]', 'data-event-id');
    expect(selected).toBe(expected);
    expect(await page.getAttribute('[role="listbox"]', 'aria-activedescendant')).toBe(`ev-${expected ?? ''}`);
    await page.keyboard.press('Enter');
    await page.waitForFunction((id) => location.hash === `#/events/${id}`, expected);
    await page.waitForSelector('#detail-title');
  });

  it('the detail view shows headers and the payload as a collapsible tree with copy buttons', async () => {
    await openEvent(ids['github'] ?? '');
    await page.waitForSelector('[aria-label="Payload as a JSON tree"]');
    const nodes = await page.$$('.json-tree details');
    expect(nodes.length).toBeGreaterThan(3);
    expect(await page.$('button[aria-label="Copy payload"]')).not.toBeNull();
    expect(await page.$('button[aria-label="Copy headers as JSON"]')).not.toBeNull();
    expect(await page.textContent('.headers-table')).toMatch(/x-github-event/);
    expect(await page.textContent('.headers-table')).toMatch(/\[redacted\]/);
    await page.click('.segmented button:has-text("Raw")');
    expect(await page.textContent('pre.code-box')).toMatch(/^\{/);
    await page.click('.segmented button:has-text("Tree")');
    await screenshot(page, '10-detail-payload');
  });

  it('shows a binary payload as base64 and downloads its exact bytes', async () => {
    const bytes = Buffer.from([0x00, 0xff, 0x10, 0x80, 0xfe, 0x0a]);
    const id = await sendOpen(server, bytes, 'application/octet-stream');
    await page.waitForSelector(row(id));
    await openEvent(id);
    expect(await page.textContent('pre.code-box')).toBe(bytes.toString('base64'));
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('button:has-text("Download")')]);
    expect(download.suggestedFilename()).toBe(`${id}.bin`);
    const path = await download.path();
    expect((await readFile(path)).equals(bytes)).toBe(true);
  });

  it('replays to a local server and shows the result and the history', async () => {
    await openEvent(ids['github'] ?? '');
    expect(await page.inputValue('#replay-target')).toBe(consumer.url());
    const before = consumer.requests.length;
    await page.click('.replay-form button[type=submit]');
    await page.waitForSelector('[data-testid="replay-result"]');
    expect(await page.textContent('[data-testid="replay-result"]')).toMatch(/Delivered — HTTP 202/);
    await page.waitForSelector('table[aria-label="Replay history"] tbody tr');
    expect(await page.textContent('table[aria-label="Replay history"]')).toMatch(/HTTP 202/);
    expect(consumer.requests.length).toBe(before + 1);
    await page.locator('[data-testid="replay-result"]').scrollIntoViewIfNeeded();
    await screenshot(page, '11-replay-result');

    await page.fill('#replay-target', 'http://127.0.0.1:1/down');
    await page.click('.replay-form button[type=submit]');
    await page.waitForFunction(() =>
      /Target unreachable/.test(document.querySelector('[data-testid="replay-result"]')?.textContent ?? ''),
    );
  });

  it('offers only "Send unsigned" for an event that failed its check, and the history says unsigned', async () => {
    await openEvent(ids['failed'] ?? '');
    await page.waitForSelector('[data-testid="replay-unsigned-rule"]');
    expect(await page.textContent('[data-testid="replay-unsigned-rule"]')).toMatch(
      /failed signature verification when it arrived.*look genuine/s,
    );
    const buttons = (): Promise<string[]> =>
      page.$$eval('.replay-form button', (els) => els.map((e) => (e.textContent ?? '').trim()));
    expect(await buttons()).toEqual(['Send unsigned']);
    const before = consumer.requests.length;
    await page.click('.replay-form button[type=submit]');
    await page.waitForSelector('[data-testid="replay-result"]');
    expect(await page.textContent('[data-testid="replay-result"]')).toMatch(/Delivered unsigned — HTTP 202/);
    expect(consumer.requests.length).toBe(before + 1);
    expect(consumer.requests.at(-1)?.headers['x-hub-signature-256']).toBeUndefined();
    await page.waitForSelector('table[aria-label="Replay history"] tbody tr [data-testid="unsigned-pill"]');
    expect(await page.textContent('table[aria-label="Replay history"] tbody tr')).toMatch(/unsigned/);
    await page.locator('[data-testid="replay-unsigned-rule"]').scrollIntoViewIfNeeded();
    await screenshot(page, '11b-replay-unsigned');

    // A verified event keeps the ordinary replay, signed afresh, and no such rule.
    await openEvent(ids['github'] ?? '');
    await page.waitForSelector('.replay-form');
    expect(await buttons()).toEqual(['Replay']);
    expect(await page.$('[data-testid="replay-unsigned-rule"]')).toBeNull();
  });

  it('pages older events in on scroll', async () => {
    const many: NewEvent[] = Array.from({ length: 120 }, (_, i) => ({
      provider: 'hooks',
      eventType: 'bulk.item',
      trustMode: 'open',
      verified: false,
      verifyDetail: 'no verification: open provider',
      externalId: null,
      contentType: 'application/json',
      sourceIp: '127.0.0.1',
      headers: {},
      payload: Buffer.from(JSON.stringify({ type: 'bulk.item', i })),
    }));
    await server.store.insertMany(many);
    await page.goto(`${server.url}/#/events`);
    await page.reload({ waitUntil: 'load' });
    await page.waitForSelector('[data-event-id]');
    await page.waitForFunction(() => document.querySelectorAll('[data-event-id]').length === 50);
    await page.locator('.list-more').scrollIntoViewIfNeeded();
    await page.waitForFunction(() => document.querySelectorAll('[data-event-id]').length >= 100);
    const ids2 = await visibleRowIds();
    expect(new Set(ids2).size).toBe(ids2.length);
  });

  it('compares two events of the same type', async () => {
    await sendOpen(server, JSON.stringify({ type: 'order.created', order: { id: 1, total: 100, items: ['a'] } }));
    const second = await sendOpen(
      server,
      JSON.stringify({ type: 'order.created', order: { id: 2, total: 250, items: ['a', 'b'] }, coupon: 'X' }),
    );
    await page.waitForSelector(row(second));
    await openEvent(second);
    await page.click('a:has-text("Compare")');
    await page.waitForSelector('.diff-stats');
    expect(await page.textContent('.diff-stats')).toMatch(/\+\d+ −\d+/);
    expect(await page.$$('.diff-added')).not.toHaveLength(0);
    await screenshot(page, '12-diff');
  });

  it('reconnects after a dropped stream and shows what arrived meanwhile, once', async () => {
    await page.click('nav a:has-text("Events")');
    await page.waitForSelector('[data-live="live"]');
    // Cut every open connection, the event stream included, then deliver while the page is away.
    server.server.closeAllConnections();
    await page.waitForSelector('[data-live="offline"], [data-live="connecting"]');
    await screenshot(page, '13-offline');
    const missed = await sendOpen(server, JSON.stringify({ type: 'while.offline' }));
    await page.waitForSelector('[data-live="live"]', { timeout: 10_000 });
    await page.waitForSelector(row(missed), { timeout: 5000 });
    const all = await visibleRowIds();
    expect(all.filter((id) => id === missed)).toHaveLength(1);
    expect(new Set(all).size).toBe(all.length);
  });

  it('the providers panel shows trust, secret status, connection and a test command', async () => {
    await page.click('nav a:has-text("Providers")');
    await page.waitForSelector('[data-provider="github"]');
    const github = await page.textContent('[data-provider="github"]');
    expect(github).toMatch(/POST \/hooks\/github/);
    expect(github).toMatch(/Secret set/);
    expect(github).toContain(`npx switchboard trigger github --url ${server.url}`);
    expect(await page.textContent('[data-provider="orders"]')).toMatch(/orders \(pubsub\).*connecting/s);
    expect(await page.textContent('[data-provider="ci"]')).toMatch(/curl -X POST/);
    await screenshot(page, '14-providers');
  });

  it('shows the connection state and signs out', async () => {
    await page.click('nav a:has-text("Events")');
    expect(await page.getAttribute('.live', 'data-live')).toBe('live');
    await page.click('button:has-text("Sign out")');
    await page.waitForSelector('#token');
    expect(await page.evaluate(() => sessionStorage.getItem('switchboard.token'))).toBeNull();
  });

  it('ran without script errors or CSP violations', () => {
    expect(problems).toEqual([]);
  });
});
