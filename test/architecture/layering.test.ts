/**
 * The module layering of docs/architecture.md, enforced: modules import only lower layers, every
 * folder of src/ has a layer, no folder has an index file, no file re-exports another, and no files import
 * each other in a circle.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const src = join(root, 'src');
const BROWSER_CODE = 'ui/client/';
/**
 * What browser code may import besides itself and generated/: the foundation's pure helpers
 * (backoff, say), so the bundle and the server share one formula. Its tsconfig has no Node types,
 * so a shared/ file that needs Node does not compile into it.
 */
const BROWSER_MAY_IMPORT = 'shared/';

/** Folder → layer, from the table under "The layers, as the check reads them". */
function readLayers(markdown: string): Map<string, number> {
  const layers = new Map<string, number>();
  for (const line of markdown.split('\n')) {
    const row = /^\|\s*(\d+)\s*\|\s*([a-z, -]+?)\s*\|/.exec(line);
    if (row?.[1] === undefined || row[2] === undefined) continue;
    for (const folder of row[2].split(',')) layers.set(folder.trim(), Number(row[1]));
  }
  return layers;
}

/** Every relative import of a file (static, dynamic, re-export), resolved to a path under root. */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => resolve(dirname(file), spec));
}

/**
 * The relative specifiers a file re-exports from (`export { x } from './y.ts'`, `export * from`):
 * a pass-through that hides which file defines what its importers use. A package's type
 * (`export type { Logger } from 'pino'`) names no file of the project and is not one.
 */
function reExportsOf(path: string, text = readFileSync(path, 'utf8')): string[] {
  const kind = path.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, kind);
  // Names imported from a file of the project, so `import { x } from './y.ts'; export { x };` counts too.
  const importedFrom = new Map<string, string>();
  for (const statement of file.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const spec = statement.moduleSpecifier.text;
    if (!spec.startsWith('.')) continue;
    const bindings = statement.importClause?.namedBindings;
    if (bindings !== undefined && ts.isNamedImports(bindings)) {
      for (const element of bindings.elements) importedFrom.set(element.name.text, spec);
    }
  }
  return file.statements.flatMap((statement) => {
    if (!ts.isExportDeclaration(statement)) return [];
    const spec = statement.moduleSpecifier;
    if (spec !== undefined) return ts.isStringLiteral(spec) && spec.text.startsWith('.') ? [spec.text] : [];
    const clause = statement.exportClause;
    if (clause === undefined || !ts.isNamedExports(clause)) return [];
    return clause.elements.flatMap((element) => {
      const from = importedFrom.get((element.propertyName ?? element.name).text);
      return from === undefined ? [] : [from];
    });
  });
}

type Graph = ReadonlyMap<string, readonly string[]>;

/** The folder of src/ a path belongs to (`store`), or undefined outside src/. */
function folderOf(path: string): string | undefined {
  const rel = relative(src, path);
  if (rel.startsWith('..')) return undefined;
  const [first] = rel.split(sep);
  return first;
}

/** Imports that break the layering: upward, sideways, out of the browser bundle, or unlayered. */
function layeringViolations(graph: Graph, layers: ReadonlyMap<string, number>): string[] {
  const found: string[] = [];
  for (const [file, targets] of graph) {
    const rel = relative(src, file).split(sep).join('/');
    const from = folderOf(file);
    if (from === undefined) continue;
    if (!layers.has(from)) found.push(`src/${from}/ has no layer in docs/architecture.md`);
    for (const target of targets) {
      const targetRel = relative(src, target).split(sep).join('/');
      if (rel.startsWith(BROWSER_CODE)) {
        const allowed =
          targetRel.startsWith(BROWSER_CODE) ||
          targetRel.startsWith(BROWSER_MAY_IMPORT) ||
          relative(root, target).startsWith('generated');
        if (!allowed) {
          found.push(`src/${rel} (browser code) imports ${relative(root, target)}`);
        }
        continue;
      }
      const to = folderOf(target);
      if (to === undefined || to === from) continue;
      const fromLayer = layers.get(from);
      const toLayer = layers.get(to);
      if (fromLayer === undefined || toLayer === undefined) continue;
      if (toLayer >= fromLayer) {
        found.push(`src/${rel} (layer ${fromLayer}) imports src/${targetRel} (layer ${toLayer})`);
      }
    }
  }
  return [...new Set(found)];
}

/** Files that import each other in a circle, each circle once (Tarjan's strongly connected components). */
function importCycles(graph: Graph): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(next) ?? 0));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    const selfImport = graph.get(node)?.includes(node) === true;
    if (component.length > 1 || selfImport) cycles.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return cycles;
}

function sourceGraph(): Map<string, string[]> {
  const files = readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.tsx?$/.test(f) && !f.startsWith('ui/dist'))
    .map((f) => join(src, f));
  return new Map(files.map((file) => [file, importsOf(file)]));
}

describe('module layering (docs/architecture.md)', () => {
  const layers = readLayers(readFileSync(join(root, 'docs/architecture.md'), 'utf8'));
  const graph = sourceGraph();

  it('gives every folder of src/ a layer', () => {
    const folders = readdirSync(src).filter((name) => statSync(join(src, name)).isDirectory());
    expect(folders.filter((folder) => !layers.has(folder))).toEqual([]);
    expect([...layers.keys()].filter((folder) => !folders.includes(folder))).toEqual([]);
  });

  it('has no import of a module on the same layer or above', () => {
    expect(layeringViolations(graph, layers)).toEqual([]);
  });

  it('has no index files: every import names the file that defines what it uses', () => {
    const indexFiles = [...graph.keys()].filter((file) => /^index\.tsx?$/.test(file.split(sep).at(-1) ?? ''));
    expect(indexFiles.map((file) => relative(root, file))).toEqual([]);
  });

  it('has no re-exports: what a file exports, it defines', () => {
    const found = [...graph.keys()].flatMap((file) =>
      reExportsOf(file).map((spec) => `${relative(root, file)} re-exports ${spec}`),
    );
    expect(found).toEqual([]);
    const fixture = [
      "export type { Logger } from 'pino';",
      "export { a } from './a.ts';",
      "export type { B } from '../b/b.ts';",
      "export * from './c.ts';",
      "import { d, e } from './d.ts';",
      'const f = e;',
      'export { d, f };',
    ].join('\n');
    expect(reExportsOf(join(src, 'fixture.ts'), fixture)).toEqual(['./a.ts', '../b/b.ts', './c.ts', './d.ts']);
  });

  it('has no files that import each other in a circle', () => {
    expect(importCycles(graph).map((cycle) => cycle.map((f) => relative(root, f)))).toEqual([]);
  });

  it('keeps listen a client: of the server it imports only the presets it signs with and the foundation', () => {
    const allowed = new Set(['listen', 'presets', 'errors', 'shared']);
    const reached = [...graph]
      .filter(([file]) => folderOf(file) === 'listen')
      .flatMap(([file, targets]) =>
        targets
          .filter((target) => folderOf(target) !== undefined && !allowed.has(folderOf(target) ?? ''))
          .map((target) => `${relative(root, file)} imports ${relative(root, target)}`),
      );
    expect(reached).toEqual([]);
  });

  it('catches an upward import, a sideways one, browser code reaching out, and a circle', () => {
    const at = (path: string): string => join(src, path);
    const synthetic: Graph = new Map([
      [at('store/a.ts'), [at('mcp/b.ts')]],
      [at('api/c.ts'), [at('mcp/b.ts'), at('store/a.ts')]],
      [at('ui/client/d.ts'), [at('store/a.ts'), join(root, 'generated/types.ts'), at('shared/f.ts')]],
      [at('mcp/b.ts'), [at('mcp/e.ts')]],
      [at('mcp/e.ts'), [at('mcp/b.ts')]],
    ]);
    const layered = new Map([
      ['store', 4],
      ['api', 7],
      ['mcp', 7],
      ['ui', 7],
    ]);
    expect(layeringViolations(synthetic, layered)).toEqual([
      'src/store/a.ts (layer 4) imports src/mcp/b.ts (layer 7)',
      'src/api/c.ts (layer 7) imports src/mcp/b.ts (layer 7)',
      'src/ui/client/d.ts (browser code) imports src/store/a.ts',
    ]);
    expect(importCycles(synthetic)).toEqual([[at('mcp/b.ts'), at('mcp/e.ts')]]);
  });
});
