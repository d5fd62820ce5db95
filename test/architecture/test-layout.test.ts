/**
 * test/ mirrors src/ (docs/architecture.md, "Where the tests live"): each folder of test/ holds the
 * tests of the src/ folder of the same name, or is one of the suites that cut across modules. A
 * module's tests then sit where its next reader looks for them, not beside a module that uses it.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

/** The suites that test no one module, as docs/architecture.md names them. */
const CROSS_CUTTING = ['architecture', 'conformance', 'contract', 'fuzz', 'reliability', 'support'];

const foldersOf = (dir: string): string[] => readdirSync(dir).filter((name) => statSync(join(dir, name)).isDirectory());

/** Folders of test/ that neither mirror a folder of src/ nor are a cross-cutting suite. */
function strayFolders(testFolders: readonly string[], srcFolders: readonly string[]): string[] {
  return testFolders.filter((folder) => !srcFolders.includes(folder) && !CROSS_CUTTING.includes(folder));
}

describe('test layout', () => {
  it('gives every folder of test/ a folder of src/ of the same name, or a cross-cutting role', () => {
    expect(strayFolders(foldersOf(join(root, 'test')), foldersOf(join(root, 'src')))).toEqual([]);
  });

  it('names each cross-cutting suite in docs/architecture.md, and each exists', () => {
    const docs = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
    const section = docs.slice(docs.indexOf('## Where the tests live'));
    expect(CROSS_CUTTING.filter((folder) => !section.includes(`\`${folder}/\``))).toEqual([]);
    const testFolders = foldersOf(join(root, 'test'));
    expect(CROSS_CUTTING.filter((folder) => !testFolders.includes(folder))).toEqual([]);
  });

  it('catches a folder that mirrors nothing', () => {
    expect(strayFolders(['outbound', 'support', 'sending'], ['outbound', 'replay'])).toEqual(['sending']);
  });
});
