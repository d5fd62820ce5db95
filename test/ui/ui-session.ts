/**
 * One browser session against a real switchboard for the UI tests: the UI built into a temporary
 * directory, a local consumer for replays, the API test server (PostgreSQL, bus, replay), and a
 * Chromium page that records script errors and unexpected console errors.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { buildUi } from '../../src/ui/build-ui.ts';
import { startApiTestServer, type ApiTestServer, type ApiTestServerOptions } from '../api/api-test-server.ts';
import { answerWith, startConsumer, type Consumer } from '../support/local-server.ts';
import { launchBrowser } from './browser.ts';

export interface UiSession {
  server: ApiTestServer;
  consumer: Consumer;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Script errors, and console errors other than the provoked ones. */
  problems: string[];
  close(): Promise<void>;
}

export interface UiSessionOptions {
  context: BrowserContextOptions;
  server?: Omit<ApiTestServerOptions, 'defaultTarget' | 'uiDistDir'>;
  /**
   * Console errors the tests cause on purpose: Chromium logs every non-2xx fetch (a 401 for a
   * wrong token, a 502 for an unreachable replay target…) and every cut response.
   */
  provoked: RegExp;
  /** Start signed in (the token already in sessionStorage), rather than at the sign-in form. */
  signedIn?: boolean;
}

export async function startUiSession(options: UiSessionOptions): Promise<UiSession> {
  const tmp = await mkdtemp(join(tmpdir(), 'switchboard-ui-browser-'));
  await buildUi({ outDir: join(tmp, 'dist') });
  const consumer = await startConsumer('127.0.0.1', answerWith(202));
  const server = await startApiTestServer({
    ...options.server,
    defaultTarget: consumer.url(),
    uiDistDir: join(tmp, 'dist'),
  });
  const browser = await launchBrowser();
  const context = await browser.newContext({ colorScheme: 'light', ...options.context });
  if (options.signedIn === true) {
    await context.addInitScript((token) => sessionStorage.setItem('switchboard.token', token), server.token);
  }
  const page = await context.newPage();
  // Fail an action with playwright's own message (which selector) well before the test timeout.
  page.setDefaultTimeout(8000);
  const problems: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !options.provoked.test(msg.text())) problems.push(`console: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  return {
    server,
    consumer,
    browser,
    context,
    page,
    problems,
    async close() {
      await context.close();
      await browser.close();
      await server.close();
      await consumer.close();
      await rm(tmp, { recursive: true, force: true });
    },
  };
}
