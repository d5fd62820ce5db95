/**
 * No file in src/, nor in the helpers tests stand on (test/support/, test/<area>/support/), nor
 * in a provider's catalog folder (catalog/<name>/, its proof case), runs over 400 lines unless its opening comment says why ("Over 400 lines: …"): a long file usually
 * holds more than one responsibility. Generated code lives outside src/.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const src = join(root, 'src');
const test = join(root, 'test');
const MAX_LINES = 400;
/**
 * Long files without a reason yet, in areas others were changing when this test came in. The
 * list only shrinks: an entry that is split or explained must be removed, and the test says so.
 */
const NOT_YET_EXPLAINED: readonly string[] = [];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'dist' ? [] : sourceFiles(path);
    return /\.(tsx?|css)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The helpers under any test/…/support/ folder (test files themselves are not counted). */
function testSupportFiles(): string[] {
  return readdirSync(test, { recursive: true, encoding: 'utf8' })
    .filter((f) => /(^|\/)support\/.*\.ts$/.test(f) && !f.endsWith('.d.ts'))
    .map((f) => join(test, f));
}

/** Each provider's proof case, in catalog/<name>/. */
function catalogFiles(): string[] {
  const catalog = join(root, 'catalog');
  return readdirSync(catalog, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(catalog, f));
}

/** The file's lines, and whether its opening comment (before the first import or code) says why it is long. */
function measure(text: string): { lines: number; explained: boolean } {
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  const opening = /^\s*\/\*[\s\S]*?\*\//.exec(text)?.[0] ?? '';
  return { lines, explained: /Over 400 lines:/.test(opening) };
}

describe('file length', () => {
  const files = [...sourceFiles(src), ...testSupportFiles(), ...catalogFiles()];
  const long = files
    .map((path) => ({ path: relative(root, path), ...measure(readFileSync(path, 'utf8')) }))
    .filter((file) => file.lines > MAX_LINES);

  it('looks in src/, in the test support and in the catalog', () => {
    expect(files.map((f) => relative(root, f))).toEqual(
      expect.arrayContaining([
        'src/cli/main.ts',
        'test/support/database.ts',
        'test/fuzz/support/target.ts',
        'catalog/github/github.case.ts',
      ]),
    );
  });

  it(`finds no file in src/, test support or the catalog over ${MAX_LINES} lines without an opening comment saying why`, () => {
    const unexplained = long.filter((file) => !file.explained);
    expect(
      unexplained.filter((file) => !NOT_YET_EXPLAINED.includes(file.path)).map((f) => `${f.path} (${f.lines} lines)`),
    ).toEqual([]);
    // Split or explained since: take it off the list.
    expect(NOT_YET_EXPLAINED.filter((path) => !unexplained.some((file) => file.path === path))).toEqual([]);
  });

  it('measures what it claims: 401 lines count, 400 do not, and only the opening comment explains', () => {
    const code = (lines: number): string => 'step();\n'.repeat(lines);
    expect(measure(code(400))).toEqual({ lines: 400, explained: false });
    expect(measure(code(401))).toEqual({ lines: 401, explained: false });
    expect(measure(`/**\n * Over 400 lines: a reason.\n */\n${code(401)}`)).toEqual({ lines: 404, explained: true });
    expect(measure(`${code(401)}// Over 400 lines: too late.\n`).explained).toBe(false);
  });
});
