/**
 * Splits a migration file into single statements. Slonik sends every query through the extended
 * protocol, which accepts one statement at a time, so a file cannot be sent whole. Semicolons
 * inside quotes, quoted identifiers, dollar-quoted bodies and comments do not end a statement.
 */
export function splitSqlStatements(text: string): string[] {
  const statements: string[] = [];
  let start = 0;
  let i = 0;
  const n = text.length;

  const push = (end: number): void => {
    const statement = text.slice(start, end).trim();
    if (statement !== '' && !isOnlyComments(statement)) statements.push(statement);
  };

  while (i < n) {
    const c = text[i];
    const next = text[i + 1];
    if (c === '-' && next === '-') {
      const end = text.indexOf('\n', i);
      i = end === -1 ? n : end + 1;
    } else if (c === '/' && next === '*') {
      i = skipBlockComment(text, i);
    } else if (c === "'") {
      const escapes = i > 0 && /[eE]/.test(text[i - 1] ?? '') && !/\w/.test(text[i - 2] ?? '');
      i = skipQuoted(text, i, "'", escapes);
    } else if (c === '"') {
      i = skipQuoted(text, i, '"', false);
    } else if (c === '$') {
      const tag = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/.exec(text.slice(i));
      if (tag && !/\w/.test(text[i - 1] ?? '')) {
        const close = text.indexOf(tag[0], i + tag[0].length);
        if (close === -1) throw new SyntaxError(`unterminated dollar-quoted string ${tag[0]}`);
        i = close + tag[0].length;
      } else {
        i += 1;
      }
    } else if (c === ';') {
      push(i);
      i += 1;
      start = i;
    } else {
      i += 1;
    }
  }
  push(n);
  return statements;
}

function skipBlockComment(text: string, from: number): number {
  // PostgreSQL block comments nest.
  let depth = 0;
  let i = from;
  while (i < text.length) {
    if (text.startsWith('/*', i)) {
      depth += 1;
      i += 2;
    } else if (text.startsWith('*/', i)) {
      depth -= 1;
      i += 2;
      if (depth === 0) return i;
    } else {
      i += 1;
    }
  }
  throw new SyntaxError('unterminated block comment');
}

function skipQuoted(text: string, from: number, quote: string, backslashEscapes: boolean): number {
  let i = from + 1;
  while (i < text.length) {
    const c = text[i];
    if (backslashEscapes && c === '\\') {
      i += 2;
    } else if (c === quote) {
      if (text[i + 1] === quote) {
        i += 2;
      } else {
        return i + 1;
      }
    } else {
      i += 1;
    }
  }
  throw new SyntaxError(`unterminated ${quote === "'" ? 'string' : 'quoted identifier'}`);
}

function isOnlyComments(statement: string): boolean {
  return (
    statement
      .replace(/--[^\n]*(\n|$)/g, '')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .trim() === ''
  );
}
