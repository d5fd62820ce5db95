/**
 * switchboard's own failures outside an HTTP answer carry stable codes (src/errors/internal-error.ts),
 * as undici's do: every error class in src/ extends the HTTP registry's AppError or InternalError,
 * each InternalError code belongs to one class, and docs/contract.md lists them all.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.ts';
import { INTERNAL_ERROR_CODES, InternalError } from '../../src/errors/internal-error.ts';
import { PostgresUnreachableError } from '../../src/postgres/embedded-postgres-error.ts';
import { ServerAnswerError } from '../../src/listen/server-client.ts';

const root = join(import.meta.dirname, '../..');
const src = join(root, 'src');
// The browser bundle's ApiError mirrors the HTTP envelope it receives, whose codes are the registry's.
const BROWSER = join(src, 'ui', 'client');

const ROOTS = ['AppError', 'InternalError'];

interface ErrorClass {
  file: string;
  base: string;
  code: string | undefined;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return path === BROWSER ? [] : sourceFiles(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every class of src/ whose name ends in Error, with the class it extends and its `code` literal. */
function errorClasses(): Map<string, ErrorClass> {
  const found = new Map<string, ErrorClass>();
  for (const file of sourceFiles(src)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isClassDeclaration(node) && node.name?.text.endsWith('Error')) {
        const base = node.heritageClauses?.[0]?.types[0]?.expression.getText(source) ?? '';
        const code = node.members
          .filter(ts.isPropertyDeclaration)
          .find((member) => member.name.getText(source) === 'code')
          ?.initializer?.getText(source)
          .replace(/^'|'$/g, '');
        found.set(node.name.text, { file: relative(root, file), base, code });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

describe('internal error codes', () => {
  const classes = errorClasses();

  it('every error class of src/ extends AppError or InternalError, through its bases', () => {
    const rootOf = (name: string, seen: string[] = []): string => {
      const known = classes.get(name);
      if (ROOTS.includes(name) || known === undefined || seen.includes(name)) return name;
      return rootOf(known.base, [...seen, name]);
    };
    const strays = [...classes]
      .filter(([name]) => !ROOTS.includes(name) && !ROOTS.includes(rootOf(name)))
      .map(([name, { file, base }]) => `${file}: ${name} extends ${base}`);
    expect(strays).toEqual([]);
  });

  it('gives each code to exactly one class, and uses every code', () => {
    const byCode = new Map<string, string[]>();
    for (const [name, { code }] of classes) {
      if (code === undefined || !code.startsWith('SB_ERR_')) continue;
      byCode.set(code, [...(byCode.get(code) ?? []), name]);
    }
    expect([...byCode.keys()].sort()).toEqual([...INTERNAL_ERROR_CODES].sort());
    expect([...byCode].filter(([, names]) => names.length > 1)).toEqual([]);
  });

  it("names the subclass and keeps its code through a base's constructor", () => {
    const config = new ConfigError('bad key');
    expect(config).toBeInstanceOf(InternalError);
    expect([config.name, config.code, config.message]).toEqual(['ConfigError', 'SB_ERR_CONFIG', 'bad key']);
    const unreachable = new PostgresUnreachableError('no way in');
    expect([unreachable.name, unreachable.code]).toEqual(['PostgresUnreachableError', 'SB_ERR_POSTGRES_UNREACHABLE']);
    // The server's envelope code is kept apart from the class's own.
    const answer = new ServerAnswerError(400, 'invalid_argument', 'bad cursor');
    expect([answer.code, answer.serverCode]).toEqual(['SB_ERR_SERVER_ANSWER', 'invalid_argument']);
  });

  it('lists every code in docs/contract.md', () => {
    const docs = readFileSync(join(root, 'docs/contract.md'), 'utf8');
    const listed = [...docs.matchAll(/^\| `(SB_ERR_[A-Z_]+)` \|/gm)].map((match) => match[1]);
    expect(listed.sort()).toEqual([...INTERNAL_ERROR_CODES].sort());
  });
});
