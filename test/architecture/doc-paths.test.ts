/**
 * Every source path the docs name exists: a folder or file of src/ that moved (src/presets/ became
 * src/verify/, src/providers/ src/provider-directory/, the store's files went into its rooms) must
 * not live on in README.md or docs/ as a pointer to nothing. A path is read as written from the
 * repository's root (`src/verify/hmac.ts`), from src/ (`verify/hmac.ts`), or from one module's
 * folder, as a module's own section names its files (`events/pg-event-store.ts` under `store/`).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

/** README.md and every Markdown file under docs/. */
function docFiles(): string[] {
  const docs = readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.md'))
    .map((file) => join('docs', file));
  return ['README.md', ...docs];
}

// `src/…` folders and files, and source files named relative to src/ or a module (`verify/hmac.ts`);
// not part of a URL or of a longer path (the lookbehind), nor the built UI (made by the build).
const ROOTED = /(?<![\w./-])src\/[\w./-]*[\w/]/g;
const RELATIVE = /(?<![\w./-])[a-z][\w-]*(?:\/[\w-]+)*\/[\w-]+\.tsx?\b/g;

const modules = readdirSync(join(root, 'src')).filter((name) => statSync(join(root, 'src', name)).isDirectory());

function exists(path: string, rooted: boolean): boolean {
  const candidates = rooted
    ? [path]
    : [path, join('src', path), join('test', path), ...modules.map((module) => join('src', module, path))];
  // A module named without its extension, as a profile's table does (`src/store/outbox/delivery-claims`).
  return candidates.some((candidate) => existsSync(join(root, candidate)) || existsSync(join(root, `${candidate}.ts`)));
}

/** The source paths a text names that do not exist. */
function missingPaths(text: string): string[] {
  const missing: string[] = [];
  for (const [pattern, rooted] of [
    [ROOTED, true],
    [RELATIVE, false],
  ] as const) {
    for (const [path] of text.matchAll(pattern)) {
      if (path.includes('/dist') || (!rooted && path.startsWith('src/'))) continue;
      if (!exists(path, rooted)) missing.push(path);
    }
  }
  return missing;
}

describe('source paths named in the docs', () => {
  it.each(docFiles())('%s names only paths that exist', (file) => {
    expect(missingPaths(readFileSync(join(root, file), 'utf8'))).toEqual([]);
  });

  it('catches a path that moved', () => {
    expect(
      missingPaths('see src/presets/github-preset.ts, `src/providers/`, store/event-store.ts and verify/hmac.ts'),
    ).toEqual(['src/presets/github-preset.ts', 'src/providers/', 'store/event-store.ts']);
  });
});
