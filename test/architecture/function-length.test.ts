/**
 * No function in src/ runs over 80 lines unless a comment just before it says why ("Over 80
 * lines: …"): a long function is usually a module waiting to be split, and the few that are not
 * (one closure over state its parts all change) must say so where the next reader meets them.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const src = join(root, 'src');
const MAX_LINES = 80;
const REASON = /Over 80 lines:/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'dist' ? [] : sourceFiles(path);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The comments before the function and before each node it opens (`export`, `const x =`, `return`), up to its statement. */
function commentsBefore(node: ts.Node, file: ts.SourceFile): string {
  const texts: string[] = [];
  for (let at: ts.Node | undefined = node; at !== undefined && !ts.isSourceFile(at); at = at.parent) {
    for (const range of ts.getLeadingCommentRanges(file.text, at.getFullStart()) ?? []) {
      texts.push(file.text.slice(range.pos, range.end));
    }
    if (ts.isStatement(at) || ts.isClassElement(at) || ts.isObjectLiteralElement(at)) break;
  }
  return texts.join('\n');
}

function nameOf(node: ts.FunctionLikeDeclaration, file: ts.SourceFile): string {
  if (node.name !== undefined) return node.name.getText(file);
  const { parent } = node;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText(file);
  return '(anonymous)';
}

interface LongFunction {
  /** `path:line name`. */
  where: string;
  lines: number;
  explained: boolean;
}

function hasBody(node: ts.Node): node is ts.FunctionLikeDeclaration & { body: ts.Node } {
  return ts.isFunctionLike(node) && 'body' in node && node.body !== undefined;
}

/**
 * The lines of a function that are its own: its span less the inside of each function nested in
 * it. A nested function keeps the line its body opens on and the line it closes on (its header and
 * closing brace are statements of the outer one); the lines between are counted for it alone. So a
 * factory of small named steps is as long as its own wiring, and a long step is found by its name.
 */
function ownLines(node: ts.FunctionLikeDeclaration & { body: ts.Node }, file: ts.SourceFile): number {
  const lineOf = (position: number): number => file.getLineAndCharacterOfPosition(position).line;
  const first = lineOf(node.getStart(file));
  const last = lineOf(node.getEnd());
  let nested = 0;
  const visit = (child: ts.Node): void => {
    if (hasBody(child)) {
      nested += Math.max(0, lineOf(child.body.getEnd()) - lineOf(child.body.getStart(file)) - 1);
      return;
    }
    ts.forEachChild(child, visit);
  };
  visit(node.body);
  return last - first + 1 - nested;
}

/**
 * Every function-like body in the file whose own lines run over MAX_LINES, with whether a comment
 * says why; and, with `withReasons`, every function that gives a reason, long or not.
 */
function longFunctions(path: string, text = readFileSync(path, 'utf8'), withReasons = false): LongFunction[] {
  const kind = path.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (hasBody(node)) {
      const lines = ownLines(node, file);
      const explained = REASON.test(commentsBefore(node, file));
      if (lines > MAX_LINES || (withReasons && explained)) {
        const first = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
        found.push({ where: `${relative(root, path)}:${first + 1} ${nameOf(node, file)}`, lines, explained });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe('function length', () => {
  const all = sourceFiles(src).flatMap((path) => longFunctions(path, undefined, true));

  it(`finds no function in src/ over ${MAX_LINES} lines without a comment saying why`, () => {
    const unexplained = all.filter((found) => found.lines > MAX_LINES && !found.explained);
    expect(unexplained.map((f) => `${f.where} (${f.lines} lines)`)).toEqual([]);
  });

  it(`finds no reason on a function of ${MAX_LINES} lines or fewer: a stale reason excuses nothing`, () => {
    const stale = all.filter((found) => found.lines <= MAX_LINES && found.explained);
    expect(stale.map((f) => f.where)).toEqual([]);
  });

  it('measures what it claims: 81 lines are found, 80 are not, and a reason before the statement counts', () => {
    const body = (lines: number): string => `{\n${'  step();\n'.repeat(lines - 2)}}`;
    const fixture = [
      `export function justFits() ${body(80)}`,
      `export function tooLong() ${body(81)}`,
      '// Over 80 lines: a reason.',
      `export const explained = async (): Promise<void> => ${body(81)};`,
      'function outer() {',
      '  /** Over 80 lines: given in a doc comment before the return. */',
      `  return () => ${body(81)};`,
      '}',
    ].join('\n');
    const found = longFunctions(join(src, 'fixture.ts'), fixture);
    expect(found.map(({ where, lines, explained: ok }) => [where.replace(/^.*:\d+ /, ''), lines, ok])).toEqual([
      ['tooLong', 81, false],
      ['explained', 81, true],
      ['(anonymous)', 81, true],
    ]);
  });

  it('counts a function by its own lines: a nested body counts for the nested function, not the outer', () => {
    const steps = (count: number): string => '    step();\n'.repeat(count);
    const fixture = [
      // 3 + 2 * 50 lines long, but its own lines are its header, two step headers and closings, and the return.
      'export function factory() {',
      `  function first() {\n${steps(48)}  }`,
      `  const second = () => {\n${steps(48)}  };`,
      '  return { first, second };',
      '}',
      // 79 of its own statements and a 10-line nested step: 82 own lines (header, closing, the step's two).
      'export function ownWork() {',
      '  step();\n'.repeat(78) + `  const inner = () => {\n${steps(8)}  };`,
      '}',
    ].join('\n');
    const found = longFunctions(join(src, 'fixture.ts'), fixture);
    expect(found.map(({ where, lines }) => [where.replace(/^.*:\d+ /, ''), lines])).toEqual([['ownWork', 82]]);
  });
});
