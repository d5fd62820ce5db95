/** Debian's Chromium driven by playwright-core, for the UI tests. */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

const CHROMIUM_PATH = '/usr/bin/chromium';
const chromiumAvailable = existsSync(CHROMIUM_PATH);
const SCREENSHOT_DIR = join(import.meta.dirname, '../../test-results/screenshots');

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/**
 * Why the browser tests cannot run here, or null when they can. In CI a missing Chromium is a
 * failure rather than a skip: .ci/run installs it, so its absence there is a broken pipeline.
 */
export function browserUnavailableReason(): string | null {
  if (chromiumAvailable) return null;
  return `browser tests skipped: ${CHROMIUM_PATH} not found (install it with: apt-get install -y chromium)`;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ARGS, timeout: 60_000 });
}

export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}
