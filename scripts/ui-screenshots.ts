/**
 * The screenshots in docs/ui.md, taken again: `npm run docs:screenshots`.
 *
 * Starts the real product (`switchboard serve`, from source, as test/support/spawn-switchboard.ts
 * runs it) with a few providers, sends it the deliveries a developer would see on a normal day
 * (signed GitHub and Stripe events, a token and an open one, a forged GitHub delivery whose URL
 * carried a token), replays one to a local consumer, and photographs the list and the detail in
 * the headless Chromium the browser tests use (test/ui/browser.ts), at desktop size and at
 * 390×844. Everything stays on 127.0.0.1.
 *
 * Database: with DATABASE_URL, a scratch database on that server, dropped afterwards; without it,
 * the embedded PostgreSQL in a temporary directory.
 *
 *   npm run docs:screenshots [-- --out docs/images]
 */
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { sql } from 'slonik';
import { presetFor } from '../src/verify/preset-registry.ts';
import { createDatabasePool } from '../src/store/database/database.ts';
import { buildUi } from '../src/ui/build-ui.ts';
import { spawnSwitchboard, type SpawnedSwitchboard } from '../test/support/spawn-switchboard.ts';
import { launchBrowser } from '../test/ui/browser.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const GITHUB_SECRET = 'docs-github-secret';
const STRIPE_SECRET = 'whsec_docs_screenshots';
const CI_TOKEN = 'docs-ci-token';
const VIEWPORTS = [
  { suffix: '', width: 1440, height: 900 },
  { suffix: '-mobile', width: 390, height: 844 },
] as const;

function outDir(): string {
  const at = process.argv.indexOf('--out');
  const value = at === -1 ? undefined : process.argv[at + 1];
  return path.resolve(ROOT, value ?? 'docs/images');
}

/** A consumer on 127.0.0.1 that answers like a small app does: 200 and a line of JSON. */
async function startConsumer(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.end(JSON.stringify({ received: true, handler: 'pull_request', queued_jobs: 2 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`, server };
}

/** A scratch database on DATABASE_URL's server, or null for the embedded PostgreSQL. */
async function scratchDatabase(): Promise<{ url: string; drop(): Promise<void> } | null> {
  const base = process.env.DATABASE_URL;
  if (base === undefined || base === '') return null;
  const name = `sb_screenshots_${randomBytes(4).toString('hex')}`;
  const admin = await createDatabasePool(base, { maximumPoolSize: 1 });
  const run = async (statement: ReturnType<typeof sql.unsafe>): Promise<void> => {
    await admin.query(statement);
  };
  await run(sql.unsafe`CREATE DATABASE ${sql.identifier([name])} TEMPLATE template0 ENCODING 'UTF8'`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await run(sql.unsafe`DROP DATABASE IF EXISTS ${sql.identifier([name])} WITH (FORCE)`);
      await admin.end();
    },
  };
}

async function post(switchboard: SpawnedSwitchboard, route: string, body: unknown, headers: Record<string, string>) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(`${switchboard.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: text,
  });
  const answer = (await res.json()) as { id?: string };
  return { status: res.status, id: answer.id };
}

let delivery = 0;
async function github(
  switchboard: SpawnedSwitchboard,
  event: string,
  body: unknown,
  options: { forged?: boolean; query?: string } = {},
) {
  const bytes = Buffer.from(JSON.stringify(body));
  const signed =
    presetFor({ preset: 'github' }).sign?.({
      body: bytes,
      secret: options.forged ? 'not-the-secret' : GITHUB_SECRET,
      nowMs: Date.now(),
    }) ?? {};
  delivery += 1;
  return post(switchboard, `/hooks/github${options.query ?? ''}`, bytes.toString(), {
    ...signed,
    'x-github-event': event,
    'x-github-delivery': `7c1d${String(delivery).padStart(4, '0')}-5a6e-11ef-9d0e-1f2a3b4c5d6e`,
    'user-agent': 'GitHub-Hookshot/5e2b1f0',
  });
}

async function stripe(switchboard: SpawnedSwitchboard, type: string, object: Record<string, unknown>) {
  const body = Buffer.from(
    JSON.stringify({ id: `evt_${randomBytes(8).toString('hex')}`, object: 'event', type, data: { object } }),
  );
  const signed = presetFor({ preset: 'stripe' }).sign?.({ body, secret: STRIPE_SECRET, nowMs: Date.now() }) ?? {};
  return post(switchboard, '/hooks/stripe', body.toString(), { ...signed, 'user-agent': 'Stripe/1.0' });
}

const push = (repo: string, ref: string, message: string) => ({
  ref,
  before: randomBytes(20).toString('hex'),
  after: randomBytes(20).toString('hex'),
  repository: { full_name: repo, name: repo.split('/')[1] },
  pusher: { name: 'mona' },
  head_commit: { id: randomBytes(20).toString('hex'), message },
  commits: [{ message }],
});

const pullRequest = (action: string, number: number, title: string) => ({
  action,
  number,
  pull_request: { number, title, state: action === 'closed' ? 'closed' : 'open', merged: action === 'closed' },
  repository: { full_name: 'octo-org/api' },
  sender: { login: 'mona' },
});

/** Sends the day's deliveries, oldest first; answers the id of the one the detail shows. */
async function sendDeliveries(switchboard: SpawnedSwitchboard): Promise<{ detailId: string }> {
  await github(switchboard, 'push', push('octo-org/web', 'refs/heads/main', 'Add a dark mode toggle'));
  await github(switchboard, 'push', push('octo-org/api', 'refs/heads/release/2.4', 'Bump version to 2.4.1'));
  await stripe(switchboard, 'invoice.paid', {
    object: 'invoice',
    id: 'in_1PqZa1LkdIwHu7ix',
    amount_paid: 12000,
    currency: 'eur',
  });
  await post(
    switchboard,
    '/hooks/ci',
    { type: 'deploy.finished', service: 'api', environment: 'production', version: '2.4.1' },
    {
      'x-webhook-token': CI_TOKEN,
    },
  );
  await github(switchboard, 'pull_request', pullRequest('closed', 127, 'Retry failed deliveries with backoff'));
  await post(switchboard, '/hooks/hooks', { type: 'order.shipped', order_id: 'ord_48213', carrier: 'UPS' }, {});
  await github(switchboard, 'push', push('octo-org/api', 'refs/heads/main', 'Fix the login redirect loop'));
  await stripe(switchboard, 'payment_intent.succeeded', {
    object: 'payment_intent',
    id: 'pi_3PqYx2LkdIwHu7ix',
    amount: 4999,
    currency: 'usd',
  });
  // A forgery, from a sender that also put a token in the URL: refused (401), kept for inspection.
  await github(switchboard, 'pull_request', pullRequest('opened', 666, 'Totally legit change'), {
    forged: true,
    query: '?source=relay&token=do-not-store-me',
  });
  const opened = await github(switchboard, 'pull_request', pullRequest('opened', 128, 'Speed up the event list'));
  if (opened.id === undefined) throw new Error(`the pull_request delivery was not stored (${opened.status})`);
  // One replay to the local consumer, so the detail shows its outcome in the history.
  const replay = await fetch(`${switchboard.url}/api/events/${opened.id}/replay`, {
    method: 'POST',
    headers: { authorization: `Bearer ${switchboard.token ?? ''}`, 'content-type': 'application/json' },
    body: '{}',
  });
  if (!replay.ok) throw new Error(`replay failed: ${replay.status} ${await replay.text()}`);
  return { detailId: opened.id };
}

async function shoot(page: Page, file: string): Promise<void> {
  // Let relative times and the live pill settle, and fonts render.
  await page.waitForTimeout(300);
  await page.screenshot({ path: file, fullPage: false });
  process.stdout.write(`wrote ${path.relative(ROOT, file)}\n`);
}

async function main(): Promise<void> {
  const out = outDir();
  await mkdir(out, { recursive: true });
  // The product serves src/ui/dist when run from source: build it from the current client.
  await buildUi();
  const consumer = await startConsumer();
  const database = await scratchDatabase();
  const switchboard = await spawnSwitchboard({
    databaseUrl: database?.url ?? null,
    logLevel: 'warn',
    startTimeoutMs: 180_000,
    config: {
      providers: {
        github: { preset: 'github', secret: GITHUB_SECRET, record_rejected: true },
        stripe: { preset: 'stripe', secret: STRIPE_SECRET },
        ci: { trust_mode: 'token', token: CI_TOKEN, event_type_from: '/type' },
        hooks: { trust_mode: 'open', event_type_from: '/type' },
      },
      replay: { default_target: consumer.url },
    },
  });
  const browser = await launchBrowser();
  try {
    const { detailId } = await sendDeliveries(switchboard);
    for (const viewport of VIEWPORTS) {
      const context = await browser.newContext({
        viewport: { width: viewport.width, height: viewport.height },
        colorScheme: 'light',
        timezoneId: 'Europe/Berlin',
        locale: 'en-GB',
      });
      await context.addInitScript(
        (token) => sessionStorage.setItem('switchboard.token', token),
        switchboard.token ?? '',
      );
      const page = await context.newPage();
      await page.goto(`${switchboard.url}/#/events`);
      await page.waitForSelector('[data-live="live"]');
      await page.waitForSelector(`[data-event-id="${detailId}"]`);
      await shoot(page, path.join(out, `ui-list${viewport.suffix}.png`));
      await page.click(`[data-event-id="${detailId}"]`);
      await page.waitForSelector('[data-testid="trust-panel"]');
      await page.waitForSelector('[data-testid="compare"]');
      await page.waitForSelector('table[aria-label="Replay history"] tbody tr');
      await shoot(page, path.join(out, `ui-detail${viewport.suffix}.png`));
      await context.close();
    }
  } finally {
    await browser.close();
    await switchboard.stop();
    switchboard.cleanup();
    await new Promise<void>((resolve) => consumer.server.close(() => resolve()));
    await database?.drop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`ui-screenshots: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
