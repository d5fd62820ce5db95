import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/create-app.ts';
import { buildUi, readUiManifest } from '../../src/ui/build-ui.ts';
import { createUiSurface, UI_CONTENT_SECURITY_POLICY } from '../../src/ui/create-ui-surface.ts';
import { silentLogger } from '../support/database.ts';
import { call, type RawResponse } from '../api/http-helpers.ts';
import { listenLocal } from '../support/local-server.ts';

const FIRST_LOAD_BUDGET = 200 * 1024;

interface UiServer {
  port: number;
  token: string;
  close(): Promise<void>;
}

async function startUiOnly(distDir: string, buildIfMissing: boolean): Promise<UiServer> {
  const app = createApp({
    logger: silentLogger,
    isDatabaseUp: async () => true,
    trustProxy: false,
    surfaces: [createUiSurface({ distDir, buildIfMissing })],
  });
  const handle = app.callback();
  const listening = await listenLocal((req, res) => void handle(req, res));
  return { port: listening.port, token: '', close: () => listening.close() };
}

let tmp: string;
let ui: UiServer;
const get = (
  path: string,
  headers: Record<string, string> = { 'accept-encoding': 'gzip, deflate, br' },
): Promise<RawResponse> => call(ui, path, { token: null, headers });

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'switchboard-ui-'));
  await buildUi({ outDir: join(tmp, 'dist') });
  ui = await startUiOnly(join(tmp, 'dist'), false);
});
afterAll(async () => {
  await ui?.close();
  await rm(tmp, { recursive: true, force: true });
});

function assetPaths(html: string): string[] {
  return [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1] ?? '');
}

const headerBytes = (res: RawResponse): number =>
  Object.entries(res.headers).reduce((n, [k, v]) => n + k.length + String(v).length + 4, 0) + 17;

describe('the UI surface', () => {
  it('first load (HTML, script, stylesheet, icon) is under 200 KB transferred with gzip', async () => {
    const index = await get('/');
    expect(index.status).toBe(200);
    expect(index.headers['content-encoding']).toBe('gzip');
    const html = gunzipSync(index.bytes).toString('utf8');
    const assets = assetPaths(html);
    expect(assets.some((a) => a.endsWith('.js'))).toBe(true);
    expect(assets.some((a) => a.endsWith('.css'))).toBe(true);
    let total = index.bytes.length + headerBytes(index);
    for (const path of assets) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers['content-encoding']).toBe('gzip');
      total += res.bytes.length + headerBytes(res);
    }
    process.stdout.write(`ui first load: ${total} bytes transferred (gzip), ${assets.length + 1} requests\n`);
    expect(total).toBeLessThan(FIRST_LOAD_BUDGET);
  });

  it('serves the page with a self-only CSP and the hardening headers', async () => {
    const res = await get('/');
    expect(res.headers['content-security-policy']).toBe(UI_CONTENT_SECURITY_POLICY);
    for (const directive of [
      "default-src 'self'",
      "img-src 'self' data:",
      "style-src 'self'",
      "script-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
    ]) {
      expect(UI_CONTENT_SECURITY_POLICY).toContain(directive);
    }
    expect(UI_CONTENT_SECURITY_POLICY).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  });

  it('has no inline script or style that the CSP would have to allow', async () => {
    const html = (await get('/', {})).body;
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    expect(html).toMatch(/integrity="sha384-/);
  });

  it('caches hashed assets forever and revalidates the page', async () => {
    const html = (await get('/', {})).body;
    for (const path of assetPaths(html)) {
      const res = await get(path);
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(res.headers['content-security-policy']).toBe(UI_CONTENT_SECURITY_POLICY);
      const again = await get(path, { 'if-none-match': String(res.headers['etag']) });
      expect(again.status).toBe(304);
    }
    const plain = await get(assetPaths(html).find((p) => p.endsWith('.js')) ?? '', {});
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(plain.headers['vary']).toBe('Accept-Encoding');
  });

  it('owns only / and /assets/, and answers unknown assets and other methods plainly', async () => {
    expect((await get('/assets/nope.js')).status).toBe(404);
    const post = await call(ui, '/', { method: 'POST', token: null });
    expect(post.status).toBe(405);
    expect(post.headers['content-security-policy']).toBe(UI_CONTENT_SECURITY_POLICY);
    // Anything else falls through to the app's 404.
    const other = await get('/elsewhere');
    expect(other.status).toBe(404);
    expect(other.headers['content-type']).toMatch(/^application\/json/);
  });
});

describe('when the UI is not built', () => {
  it('answers 503 with instructions when it may not build', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'switchboard-ui-empty-'));
    const server = await startUiOnly(join(empty, 'dist'), false);
    try {
      const res = await call(server, '/', { token: null });
      expect(res.status).toBe(503);
      expect(res.body).toMatch(/npm run build<\/code>/);
      expect(res.headers['content-security-policy']).toBe(UI_CONTENT_SECURITY_POLICY);
    } finally {
      await server.close();
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('builds on the first request when esbuild is installed', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'switchboard-ui-lazy-'));
    const server = await startUiOnly(join(empty, 'dist'), true);
    try {
      const [a, b] = await Promise.all([call(server, '/', { token: null }), call(server, '/', { token: null })]);
      expect(a.status).toBe(200);
      expect(b.body).toBe(a.body);
      expect((await readUiManifest(join(empty, 'dist')))?.assets.length).toBeGreaterThanOrEqual(4);
    } finally {
      await server.close();
      await rm(empty, { recursive: true, force: true });
    }
  });
});
