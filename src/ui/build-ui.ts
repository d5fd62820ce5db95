/**
 * Builds the web UI: one hashed JS bundle (Preact + the client), one hashed stylesheet, a hashed
 * favicon and index.html, each with a gzip twin so the server never compresses at request time.
 * Run by `npm run build:ui` and by `npm run build` (which `npm ci` runs through `prepare`), which
 * copies the result into dist/; the UI surface can call it when asked to build a missing UI.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { pathExists } from '../shared/path-exists.ts';

/** @internal outside src/, only tests or benches use it */
export const UI_SOURCE_DIR = fileURLToPath(new URL('./client/', import.meta.url));
export const DEFAULT_UI_DIST = fileURLToPath(new URL('./dist/', import.meta.url));
/** @internal outside src/, only tests or benches use it */
export const UI_MANIFEST = 'manifest.json';

export interface UiAsset {
  /** URL path, e.g. /assets/app-3FJ2K.js */
  path: string;
  /** File name inside the dist directory. */
  file: string;
  contentType: string;
  /** Content-hashed, so it may be cached forever. */
  immutable: boolean;
  bytes: number;
  gzipBytes: number;
}

export interface UiManifest {
  builtAt: string;
  assets: UiAsset[];
}

export interface BuildUiOptions {
  /** Where to write; default src/ui/dist. Replaced as a whole. */
  outDir?: string;
  minify?: boolean;
}

const TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.html': 'text/html; charset=utf-8',
};

const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#4338ca"/><path d="M9 11h14M9 16h9M9 21h12" stroke="#fff" stroke-width="2.6" stroke-linecap="round"/><circle cx="23" cy="16" r="2.4" fill="#34d399"/></svg>`;

function contentTypeOf(file: string): string {
  const ext = file.slice(file.lastIndexOf('.'));
  return TYPES[ext] ?? 'application/octet-stream';
}

function shortHash(content: Buffer | string): string {
  return createHash('sha256').update(content).digest('base64url').slice(0, 10);
}

function sri(content: Buffer | string): string {
  return `sha384-${createHash('sha384').update(content).digest('base64')}`;
}

function indexHtml(
  js: { path: string; integrity: string },
  css: { path: string; integrity: string },
  icon: string,
): string {
  // No inline script or style anywhere: the CSP allows only 'self'.
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="color-scheme" content="light dark">',
    '<title>switchboard</title>',
    `<link rel="icon" type="image/svg+xml" href="${icon}">`,
    `<link rel="stylesheet" href="${css.path}" integrity="${css.integrity}">`,
    `<script type="module" src="${js.path}" integrity="${js.integrity}"></script>`,
    '</head>',
    '<body>',
    '<div id="app"><p class="boot">Loading switchboard…</p></div>',
    '<noscript><p class="boot">The switchboard UI needs JavaScript. The HTTP API at /api works without it.</p></noscript>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/** Builds into a fresh sibling directory and swaps it in, so a server never sees half a build. */
export async function buildUi(options: BuildUiOptions = {}): Promise<UiManifest> {
  const outDir = options.outDir ?? DEFAULT_UI_DIST;
  const esbuild = await import('esbuild');
  const staging = join(dirname(outDir), `.${basename(outDir)}-${randomBytes(6).toString('hex')}`);
  await mkdir(join(staging, 'assets'), { recursive: true });
  try {
    const result = await esbuild.build({
      entryPoints: [join(UI_SOURCE_DIR, 'main.tsx')],
      bundle: true,
      // Preact's automatic JSX runtime, as src/ui/client/tsconfig.json types it.
      jsx: 'automatic',
      jsxImportSource: 'preact',
      tsconfig: join(UI_SOURCE_DIR, 'tsconfig.json'),
      format: 'esm',
      platform: 'browser',
      target: ['es2022', 'chrome109', 'firefox115', 'safari16'],
      minify: options.minify ?? true,
      sourcemap: false,
      legalComments: 'none',
      write: false,
      outdir: join(staging, 'assets'),
      entryNames: 'app-[hash]',
      assetNames: '[name]-[hash]',
      metafile: false,
      logLevel: 'silent',
      define: { 'process.env.NODE_ENV': '"production"' },
    });
    const assets: UiAsset[] = [];
    const add = async (file: string, content: Buffer | string, immutable: boolean): Promise<UiAsset> => {
      const bytes = Buffer.from(content);
      const gz = gzipSync(bytes, { level: 9 });
      await writeFile(join(staging, file), bytes);
      await writeFile(join(staging, `${file}.gz`), gz);
      const asset: UiAsset = {
        path: file === 'index.html' ? '/' : `/${file}`,
        file,
        contentType: contentTypeOf(file),
        immutable,
        bytes: bytes.length,
        gzipBytes: gz.length,
      };
      assets.push(asset);
      return asset;
    };
    let js: { path: string; integrity: string } | undefined;
    let css: { path: string; integrity: string } | undefined;
    for (const output of result.outputFiles) {
      const file = `assets/${basename(output.path)}`;
      const asset = await add(file, Buffer.from(output.contents), true);
      if (file.endsWith('.js')) js = { path: asset.path, integrity: sri(Buffer.from(output.contents)) };
      if (file.endsWith('.css')) css = { path: asset.path, integrity: sri(Buffer.from(output.contents)) };
    }
    if (!js || !css) throw new Error('build-ui: esbuild produced no script or no stylesheet');
    const icon = await add(`assets/favicon-${shortHash(FAVICON)}.svg`, FAVICON, true);
    await add('index.html', indexHtml(js, css, icon.path), false);
    const manifest: UiManifest = { builtAt: new Date().toISOString(), assets };
    await writeFile(join(staging, UI_MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
    await rm(outDir, { recursive: true, force: true });
    await rename(staging, outDir);
    return manifest;
  } catch (err: unknown) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
}

/** Reads a built UI's manifest, or null when there is none (not built, or built half-way by hand). */
export async function readUiManifest(distDir: string = DEFAULT_UI_DIST): Promise<UiManifest | null> {
  const path = join(distDir, UI_MANIFEST);
  if (!(await pathExists(path))) return null;
  const parsed = JSON.parse(await readFile(path, 'utf8')) as UiManifest;
  return Array.isArray(parsed.assets) ? parsed : null;
}

/** True when esbuild (a devDependency) can be loaded, i.e. this install can build the UI. */
export async function canBuildUi(): Promise<boolean> {
  return import('esbuild').then(
    () => true,
    () => false,
  );
}

async function cli(): Promise<number> {
  if (!(await canBuildUi())) {
    // An install without devDependencies (npm ci --omit=dev) runs `prepare` too; it must not fail there.
    process.stdout.write(
      'build-ui: esbuild is not installed (production install?); skipping. The server explains this at /.\n',
    );
    return 0;
  }
  const started = performance.now();
  const manifest = await buildUi();
  const total = manifest.assets.reduce((sum, a) => sum + a.gzipBytes, 0);
  for (const a of manifest.assets) {
    process.stdout.write(
      `  ${a.file.padEnd(36)} ${String(a.bytes).padStart(8)} B  ${String(a.gzipBytes).padStart(7)} B gzip\n`,
    );
  }
  process.stdout.write(
    `build-ui: ${DEFAULT_UI_DIST} in ${Math.round(performance.now() - started)} ms, ${total} B gzip in total\n`,
  );
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await cli();
}
