/**
 * The module layering of docs/architecture.md, enforced: modules import only lower layers, every
 * folder of src/ has a layer, the rooms of a module (store/'s) import only lower rooms, no folder has
 * an index file, no file re-exports another, and no files import each other in a circle.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
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

/**
 * Room → its order within its module (`store/events` → 3), from the rooms table: rows whose
 * folders are written `module/room`, which the layers table's pattern does not match.
 */
function readRooms(markdown: string): Map<string, number> {
  const rooms = new Map<string, number>();
  for (const line of markdown.split('\n')) {
    const row = /^\|\s*(\d+)\s*\|\s*([a-z-]+\/[a-z-]+(?:,\s*[a-z-]+\/[a-z-]+)*)\s*\|/.exec(line);
    if (row?.[1] === undefined || row[2] === undefined) continue;
    for (const room of row[2].split(',')) rooms.set(room.trim(), Number(row[1]));
  }
  return rooms;
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

/** The modules the rooms table divides (`store`). */
function roomedModules(rooms: ReadonlyMap<string, number>): Set<string> {
  return new Set([...rooms.keys()].map((room) => room.split('/')[0] ?? ''));
}

/**
 * The room a path of a roomed module is in (`store/events`), or undefined in a module without
 * rooms. A file directly in the module gets its own name, which no room has.
 */
function roomOf(path: string, roomed: ReadonlySet<string>): string | undefined {
  const [module, room] = relative(src, path).split(sep);
  return module !== undefined && room !== undefined && roomed.has(module) ? `${module}/${room}` : undefined;
}

/** Within a roomed module: imports of a room on the same order or above, and files in no room. */
function roomViolations(file: string, target: string, rooms: ReadonlyMap<string, number>): string[] {
  const roomed = roomedModules(rooms);
  const fromRoom = roomOf(file, roomed);
  const toRoom = roomOf(target, roomed);
  if (fromRoom === undefined || toRoom === undefined || fromRoom === toRoom) return [];
  const fromOrder = rooms.get(fromRoom);
  const toOrder = rooms.get(toRoom);
  const rel = (path: string): string => relative(src, path).split(sep).join('/');
  if (fromOrder === undefined) return [`src/${rel(file)} is in no room of docs/architecture.md`];
  if (toOrder === undefined) {
    return [`src/${rel(file)} (room ${fromOrder}) imports src/${rel(target)}, in no room of docs/architecture.md`];
  }
  if (toOrder < fromOrder) return [];
  return [`src/${rel(file)} (room ${fromOrder}) imports src/${rel(target)} (room ${toOrder})`];
}

/** Imports that break the layering: upward, sideways, out of the browser bundle, or unlayered. */
function layeringViolations(
  graph: Graph,
  layers: ReadonlyMap<string, number>,
  rooms: ReadonlyMap<string, number> = new Map(),
): string[] {
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
      if (to === from) found.push(...roomViolations(file, target, rooms));
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
  const architecture = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
  const layers = readLayers(architecture);
  const rooms = readRooms(architecture);
  const graph = sourceGraph();

  it('gives every folder of src/ a layer', () => {
    const folders = readdirSync(src).filter((name) => statSync(join(src, name)).isDirectory());
    expect(folders.filter((folder) => !layers.has(folder))).toEqual([]);
    expect([...layers.keys()].filter((folder) => !folders.includes(folder))).toEqual([]);
  });

  it('has no import of a module on the same layer or above, nor of a room on the same order or above', () => {
    expect(layeringViolations(graph, layers, rooms)).toEqual([]);
  });

  it('gives every folder of a roomed module a room, and leaves no file outside them', () => {
    expect(rooms.size).toBeGreaterThan(0);
    const found: string[] = [];
    for (const module of roomedModules(rooms)) {
      for (const name of readdirSync(join(src, module))) {
        const room = `${module}/${name}`;
        if (!statSync(join(src, room)).isDirectory()) found.push(`src/${room} is in no room`);
        else if (!rooms.has(room)) found.push(`src/${room}/ has no room in docs/architecture.md`);
      }
    }
    for (const room of rooms.keys()) {
      if (!existsSync(join(src, room))) found.push(`docs/architecture.md names src/${room}/, which does not exist`);
    }
    expect(found).toEqual([]);
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
    const allowed = new Set(['listen', 'verify', 'errors', 'shared']);
    const reached = [...graph]
      .filter(([file]) => folderOf(file) === 'listen')
      .flatMap(([file, targets]) =>
        targets
          .filter((target) => folderOf(target) !== undefined && !allowed.has(folderOf(target) ?? ''))
          .map((target) => `${relative(root, file)} imports ${relative(root, target)}`),
      );
    expect(reached).toEqual([]);
  });

  it('catches an upward import, a sideways one, browser code reaching out, a room reaching up, and a circle', () => {
    const at = (path: string): string => join(src, path);
    const synthetic: Graph = new Map([
      [at('store/a.ts'), [at('mcp/b.ts')]],
      [at('api/c.ts'), [at('mcp/b.ts'), at('store/a.ts')]],
      [at('ui/client/d.ts'), [at('store/a.ts'), join(root, 'generated/types.ts'), at('shared/f.ts')]],
      [at('mcp/b.ts'), [at('mcp/e.ts')]],
      [at('mcp/e.ts'), [at('mcp/b.ts')]],
      [at('store/low/g.ts'), [at('store/high/h.ts'), at('store/low/i.ts')]],
      [at('store/high/h.ts'), [at('store/low/i.ts'), at('store/side/j.ts')]],
      [at('store/side/j.ts'), [at('store/k.ts')]],
    ]);
    const layered = new Map([
      ['store', 4],
      ['api', 7],
      ['mcp', 7],
      ['ui', 7],
    ]);
    const roomed = new Map([
      ['store/low', 0],
      ['store/high', 1],
      ['store/side', 1],
    ]);
    expect(layeringViolations(synthetic, layered, roomed)).toEqual([
      'src/store/a.ts (layer 4) imports src/mcp/b.ts (layer 7)',
      'src/api/c.ts (layer 7) imports src/mcp/b.ts (layer 7)',
      'src/ui/client/d.ts (browser code) imports src/store/a.ts',
      'src/store/low/g.ts (room 0) imports src/store/high/h.ts (room 1)',
      'src/store/high/h.ts (room 1) imports src/store/side/j.ts (room 1)',
      'src/store/side/j.ts (room 1) imports src/store/k.ts, in no room of docs/architecture.md',
    ]);
    expect(readRooms('| 3 | store/events, store/records | x |\n| 4 | store | y |')).toEqual(
      new Map([
        ['store/events', 3],
        ['store/records', 3],
      ]),
    );
    expect(importCycles(synthetic)).toEqual([[at('mcp/b.ts'), at('mcp/e.ts')]]);
  });
});
