/**
 * JSON.parse that refuses an object with a key twice (JSON.parse keeps the last one silently), for
 * tests that check what switchboard writes: its log lines, its answers. It walks the text once to
 * find every object's keys, then hands the text to JSON.parse for the value and the syntax check.
 */

/** Thrown for a key an object has twice; `path` is where (`$.a.b`). */
export class DuplicateKeyError extends Error {}

export function parseStrictJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  let i = 0;
  const ws = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i] ?? '')) i += 1;
  };
  const string = (): string => {
    const start = i;
    i += 1;
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i += 1;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const walk = (path: string): void => {
    ws();
    const c = text[i];
    if (c === '{') {
      i += 1;
      const seen = new Set<string>();
      for (ws(); text[i] !== '}'; ws()) {
        if (text[i] === ',') i += 1;
        ws();
        const key = string();
        if (seen.has(key)) throw new DuplicateKeyError(`key ${JSON.stringify(key)} appears twice in ${path}`);
        seen.add(key);
        ws();
        i += 1; // the colon
        walk(`${path}.${key}`);
      }
      i += 1;
    } else if (c === '[') {
      i += 1;
      for (let n = 0; ws(), text[i] !== ']'; n += 1) {
        if (text[i] === ',') i += 1;
        walk(`${path}[${n}]`);
      }
      i += 1;
    } else if (c === '"') {
      string();
    } else {
      // A number, true, false or null: JSON.parse has checked it; skip to what ends it.
      while (i < text.length && !',}] \t\n\r'.includes(text[i] ?? '')) i += 1;
    }
  };
  walk('$');
  return value;
}
