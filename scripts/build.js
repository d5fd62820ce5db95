#!/usr/bin/env node
/**
 * `npm run build` (and `preprepare`, so `npm ci` builds too; `prepack`, so `npm pack` packs a fresh
 * build): compiles src/ to dist/ with tsc, builds the web UI, and copies what the code reads at run
 * time beside it.
 *
 * Why `preprepare` and not `prepare`: npm 11.19 and later list a `prepare` script of a package
 * installed from a tarball among the "install scripts not yet covered by allowScripts", and warn
 * during the README's global install, although a tarball install never runs it. npm ci and npm
 * install run the project's own preprepare exactly as they run prepare, and nothing of a
 * dependency's, so the package has no script that an install would run or list.
 *
 *   dist/src/**          every src/**\/*.ts compiled (with source maps), and every other file in
 *                        src/ (SQL migrations, the built UI in src/ui/dist/);
 *                        src/ui/client/ is left out, esbuild bundles it into the UI build
 *   dist/generated/**    the generated modules src/ imports (the catalog and its trigger samples)
 *   dist/package.json    name, version and "type": "module" of the package
 *   dist/switchboard.example.yaml   the example config `switchboard init` writes (read as
 *                        ../../switchboard.example.yaml from src/cli/, like package.json)
 *
 * dist/ mirrors the repository's layout one level down, so every path the code resolves from
 * import.meta.url (../../generated/, ./migrations/, ./dist/) means the same thing there. Code
 * that reads ../../package.json gets dist/package.json. Nothing here lists src/ files: a file
 * added to src/ is built and shipped without a change to this script or to package.json.
 *
 * tsc only emits here (noCheck in tsconfig.build.json): `npm run typecheck` checks the types, in CI
 * before anything is built. Plain JavaScript, so that it runs before anything is compiled. Without the devDependencies
 * (npm ci --omit=dev), `--if-possible` skips the build with a note instead of failing. `--if-stale`
 * builds only when a source is newer than dist/ (npm pack right after npm ci packs that build).
 */
import { spawnSync } from 'node:child_process';
import { cp, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'dist');
const require = createRequire(import.meta.url);
/** The example config, at the root of the repository and of dist/. */
const EXAMPLE_CONFIG = 'switchboard.example.yaml';

function resolves(name) {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

function run(args, what) {
  const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    process.stderr.write(`build: ${what} failed\n`);
    process.exit(result.status ?? 1);
  }
}

/** Every file below dir, as paths relative to it, skipping the folders in `skip` (relative too). */
async function filesBelow(dir, skip = []) {
  const found = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const relative = entry.name;
    if (skip.includes(relative)) continue;
    if (entry.isDirectory()) {
      const inner = skip.filter((s) => s.startsWith(`${relative}/`)).map((s) => s.slice(relative.length + 1));
      for (const file of await filesBelow(path.join(dir, relative), inner)) found.push(path.join(relative, file));
    } else if (entry.isFile()) {
      found.push(relative);
    }
  }
  return found;
}

async function copyRuntimeFiles(from, to, skip) {
  let copied = 0;
  for (const file of await filesBelow(path.join(root, from), skip)) {
    if (file.endsWith('.ts')) continue;
    await mkdir(path.dirname(path.join(out, to, file)), { recursive: true });
    await cp(path.join(root, from, file), path.join(out, to, file));
    copied += 1;
  }
  return copied;
}

/** Newest modification time of the files below dir (skipping folders named in skip), in ms. */
async function newestBelow(dir, skip = []) {
  let newest = 0;
  for (const file of await filesBelow(dir, skip)) {
    newest = Math.max(newest, (await stat(path.join(dir, file))).mtimeMs);
  }
  return newest;
}

/** True when dist/ is missing or older than something it is built from. */
async function isStale() {
  let built;
  try {
    built = (await stat(path.join(out, 'package.json'))).mtimeMs;
  } catch {
    return true;
  }
  const inputs = [
    await newestBelow(path.join(root, 'src'), ['ui/dist']),
    await newestBelow(path.join(root, 'generated')),
    ...(await Promise.all(
      ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.js', EXAMPLE_CONFIG].map(async (file) =>
        stat(path.join(root, file)).then(
          (s) => s.mtimeMs,
          () => 0,
        ),
      ),
    )),
  ];
  return inputs.some((time) => time > built);
}

async function main() {
  if (process.argv.includes('--if-stale') && !(await isStale())) {
    process.stdout.write('build: dist/ is up to date\n');
    return;
  }
  const missing = ['typescript', 'tsx', 'esbuild'].filter((name) => !resolves(name));
  if (missing.length > 0) {
    const note = `build: ${missing.join(', ')} not installed (devDependencies); dist/ not built`;
    if (process.argv.includes('--if-possible')) {
      process.stdout.write(
        `${note}. Install them (npm ci) and run \`npm run build\`, or install the published package.\n`,
      );
      return;
    }
    process.stderr.write(`${note}\n`);
    process.exit(1);
  }
  const started = performance.now();
  // A fresh dist/ each time: a source deleted or moved must not live on in the build.
  await rm(out, { recursive: true, force: true });
  run(['--import', 'tsx', path.join(root, 'src/ui/build-ui.ts')], 'the UI build');
  run([require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], 'tsc');
  const assets = await copyRuntimeFiles('src', 'src', ['ui/client']);
  const generated = await copyRuntimeFiles('generated', 'generated', []);
  await cp(path.join(root, EXAMPLE_CONFIG), path.join(out, EXAMPLE_CONFIG));
  const pkg = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8'));
  await writeFile(
    path.join(out, 'package.json'),
    `${JSON.stringify({ name: pkg.name, version: pkg.version, private: true, type: 'module' }, null, 2)}\n`,
  );
  const modules = (await filesBelow(out)).filter((file) => file.endsWith('.js')).length;
  process.stdout.write(
    `build: dist/ in ${Math.round(performance.now() - started)} ms: ${modules} JavaScript files, ` +
      `${assets + generated} files copied from src/ and generated/\n`,
  );
}

await main();
