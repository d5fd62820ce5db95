import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Context, Middleware } from 'koa';
import { buildUi, canBuildUi, DEFAULT_UI_DIST, readUiManifest, type UiAsset } from './build-ui.ts';

/**
 * The UI's page policy. Everything comes from this origin; nothing inline (the build emits no
 * inline script or style), so an injected string can never run, and the UI cannot be framed.
 * @internal outside src/, only tests or benches use it
 */
export const UI_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "img-src 'self' data:",
  "style-src 'self'",
  "script-src 'self'",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
].join('; ');

const UI_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': UI_CONTENT_SECURITY_POLICY,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=(), usb=()',
};

export interface UiSurfaceOptions {
  /** Built assets; default src/ui/dist. */
  distDir?: string | undefined;
  /**
   * Build the UI on the first request when distDir holds no build and esbuild is installed
   * (default false: `npm run build` builds it, and the package ships it). Without a build, /
   * answers 503 with instructions instead.
   */
  buildIfMissing?: boolean;
}

interface LoadedAsset extends UiAsset {
  body: Buffer;
  gzip: Buffer;
  etag: string;
}

type Loaded = { kind: 'ready'; byPath: Map<string, LoadedAsset> } | { kind: 'missing'; reason: string };

const NOT_BUILT_PAGE = (reason: string): string =>
  [
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>switchboard: UI not built</title></head><body>',
    '<h1>The switchboard web UI is not built</h1>',
    `<p>${reason}</p>`,
    '<p>Build it with <code>npm run build</code> (needs the devDependencies: <code>npm ci</code> builds it) and reload. ',
    'Webhooks, MCP and the HTTP API under <code>/api</code> work without it.</p>',
    '</body></html>',
  ].join('');

async function load(distDir: string): Promise<LoadedAsset[] | null> {
  const manifest = await readUiManifest(distDir);
  if (!manifest) return null;
  return Promise.all(
    manifest.assets.map(async (asset) => {
      const [body, gzip] = await Promise.all([
        readFile(join(distDir, asset.file)),
        readFile(join(distDir, `${asset.file}.gz`)),
      ]);
      return { ...asset, body, gzip, etag: `"${asset.bytes.toString(36)}-${hashOf(body)}"` };
    }),
  );
}

function hashOf(body: Buffer): string {
  // FNV-1a: an ETag only has to change when the bytes do, it guards nothing.
  let h = 0x811c9dc5;
  for (const byte of body) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h.toString(36);
}

async function loadOrBuild(distDir: string, buildIfMissing: boolean): Promise<Loaded> {
  let assets = await load(distDir);
  if (!assets && buildIfMissing) {
    if (!(await canBuildUi()))
      return { kind: 'missing', reason: `No build in ${distDir}, and esbuild is not installed to make one.` };
    await buildUi({ outDir: distDir });
    assets = await load(distDir);
  }
  if (!assets) return { kind: 'missing', reason: `No build in ${distDir}.` };
  return { kind: 'ready', byPath: new Map(assets.map((a) => [a.path, a])) };
}

function acceptsGzip(ctx: Context): boolean {
  return /\bgzip\b/i.test(ctx.get('accept-encoding'));
}

function isUiPath(path: string): boolean {
  return path === '/' || path === '/index.html' || path.startsWith('/assets/');
}

/**
 * Serves the single-page UI at / and its assets under /assets/. It owns no other path, so it can
 * sit anywhere in the surface list. The UI holds no data: everything it shows comes from /api
 * with the bearer token the user typed in.
 */
export function createUiSurface(options: UiSurfaceOptions = {}): Middleware {
  const distDir = options.distDir ?? DEFAULT_UI_DIST;
  const buildIfMissing = options.buildIfMissing ?? false;
  let loading: Promise<Loaded> | undefined;

  const assets = async (): Promise<Loaded> => {
    loading ??= loadOrBuild(distDir, buildIfMissing).catch((err: unknown) => {
      // A failed build is retried on the next request rather than cached forever.
      loading = undefined;
      throw err;
    });
    const loaded = await loading;
    // A missing build may be fixed by `npm run build:ui` while the server runs: look again next time.
    if (loaded.kind === 'missing') loading = undefined;
    return loaded;
  };

  return async (ctx, next) => {
    if (!isUiPath(ctx.path)) {
      await next();
      return;
    }
    ctx.set(UI_SECURITY_HEADERS as Record<string, string>);
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.status = 405;
      ctx.set('Allow', 'GET, HEAD');
      ctx.type = 'text/plain';
      ctx.body = 'method not allowed\n';
      return;
    }
    const loaded = await assets();
    if (loaded.kind === 'missing') {
      ctx.status = 503;
      ctx.set('Cache-Control', 'no-store');
      ctx.set('Retry-After', '30');
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = NOT_BUILT_PAGE(loaded.reason);
      return;
    }
    const asset = loaded.byPath.get(ctx.path === '/index.html' ? '/' : ctx.path);
    if (!asset) {
      ctx.status = 404;
      ctx.set('Cache-Control', 'no-store');
      ctx.type = 'text/plain';
      ctx.body = 'not found\n';
      return;
    }
    ctx.set('Cache-Control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    ctx.set('Vary', 'Accept-Encoding');
    ctx.set('ETag', asset.etag);
    if (ctx.get('if-none-match') === asset.etag) {
      ctx.status = 304;
      return;
    }
    ctx.status = 200;
    ctx.type = asset.contentType;
    if (acceptsGzip(ctx)) {
      ctx.set('Content-Encoding', 'gzip');
      ctx.body = asset.gzip;
    } else {
      ctx.body = asset.body;
    }
  };
}
