/**
 * The schema is the only source of a default, a limit or an enum: src/ reads them from generated/
 * (constants.ts, the useDefaults validators) and never writes one down again. These tests look for
 * the literal values next to their keys, the way a restatement reads
 * (`config.mcp?.max_sessions ?? 100`, `DEFAULT_TOLERANCE_SECONDS = 300`, `length > 64`,
 * `'signed' | 'token' | 'open' | 'queue'`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCHEMAS } from '../../generated/schemas.ts';
import { validateSwitchboardConfig } from '../../generated/validators.js';

const root = join(import.meta.dirname, '../..');
const schemasDir = join(root, 'schemas');

type Node = { [key: string]: unknown };

interface ValueFact {
  key: string;
  value: string | number | boolean;
  /** Where the schema states it, for the failure message. */
  where: string;
  /**
   * Stated in an if/then/else branch (the queue-only keys, family): such values double as
   * discriminants (`family: 'queue'`), so only a fallback to them (`?? 'pubsub'`) is a restatement.
   */
  conditional?: boolean;
}

interface EnumFact {
  values: string[];
  where: string;
}

const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Bounds this small say little on their own (`minLength: 1`); looking for them would find every `1`. */
const BOUND_KEYWORDS = ['maxLength', 'minLength', 'maximum', 'minimum', 'maxItems', 'minItems'];
const TRIVIAL_BOUND = 1;

function collectFacts(
  node: unknown,
  where: string,
  key: string | undefined,
  facts: ValueFact[],
  enums: EnumFact[],
): void {
  if (Array.isArray(node)) {
    node.forEach((n, i) => collectFacts(n, `${where}/${i}`, key, facts, enums));
    return;
  }
  if (!isNode(node)) return;
  if (key !== undefined) {
    const d = node.default;
    const conditional = /\/(if|then|else)\//.test(where);
    if (typeof d === 'string' || typeof d === 'number' || typeof d === 'boolean') {
      facts.push({ key, value: d, where, conditional });
    }
    for (const keyword of BOUND_KEYWORDS) {
      const bound = node[keyword];
      if (typeof bound === 'number' && bound > TRIVIAL_BOUND)
        facts.push({ key, value: bound, where: `${where}/${keyword}` });
    }
  }
  const values = node.enum;
  if (Array.isArray(values)) {
    const strings = values.filter((v): v is string => typeof v === 'string');
    if (strings.length >= 2) enums.push({ values: strings, where });
  }
  for (const [k, v] of Object.entries(node)) {
    if ((k === 'properties' || k === '$defs') && isNode(v)) {
      for (const [name, sub] of Object.entries(v)) collectFacts(sub, `${where}/${k}/${name}`, name, facts, enums);
    } else if (k !== 'enum' && k !== 'default' && k !== 'examples') {
      collectFacts(v, `${where}/${k}`, key, facts, enums);
    }
  }
}

function schemaFacts(): { facts: ValueFact[]; enums: EnumFact[] } {
  const facts: ValueFact[] = [];
  const enums: EnumFact[] = [];
  const files = readdirSync(schemasDir, { recursive: true, encoding: 'utf8' }).filter((f) =>
    f.endsWith('.schema.json'),
  );
  for (const file of files) {
    collectFacts(JSON.parse(readFileSync(join(schemasDir, file), 'utf8')), `schemas/${file}#`, undefined, facts, enums);
  }
  return { facts, enums };
}

const camel = (snake: string): string => snake.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `5 * 1024 * 1024`, `10_000`, `0.5`: the numbers a line writes, evaluated. */
function numbersIn(text: string): number[] {
  const out: number[] = [];
  // An array index (`match[2]`) is never a bound.
  for (const match of text.matchAll(/(?<![\w.[])\d[\d_]*(?:\.\d+)?(?:\s*\*\s*\d[\d_]*(?:\.\d+)?)*(?![\w.\]])/g)) {
    out.push(
      match[0]
        .split('*')
        .map((part) => Number(part.trim().replaceAll('_', '')))
        .reduce((a, b) => a * b, 1),
    );
  }
  return out;
}

/** Each key's spellings, as plain text and as the pattern that finds it as a whole word. */
const spellingsByKey = new Map<string, { text: string; pattern: RegExp }[]>();

function spellingsOf(key: string): { text: string; pattern: RegExp }[] {
  // Made once per key, not once per line and fact: the scan pairs every code line of src/ with
  // every fact, and compiling these for each pair made the test take 30 s and more on a busy CI.
  let spellings = spellingsByKey.get(key);
  if (spellings === undefined) {
    spellings = [
      { text: key, pattern: new RegExp(`(?<![A-Za-z0-9])${escape(key)}(?![A-Za-z0-9])`) },
      { text: camel(key), pattern: new RegExp(`(?<![A-Za-z0-9])${escape(camel(key))}(?![a-z0-9])`) },
      { text: key.toUpperCase(), pattern: new RegExp(`${escape(key.toUpperCase())}(?![A-Z0-9])`) },
    ];
    spellingsByKey.set(key, spellings);
  }
  return spellings;
}

/** The rest of each line after one of the key's spellings (snake, camel, or inside an UPPER_SNAKE name). */
function afterKey(line: string, key: string): string | undefined {
  for (const { text, pattern } of spellingsOf(key)) {
    // A line without the spelling's text cannot match its pattern; most lines have none of them.
    if (!line.includes(text)) continue;
    const match = pattern.exec(line);
    if (match) return line.slice(match.index + match[0].length);
  }
  return undefined;
}

/** Whether this line writes the fact's value next to its key. */
function restates(line: string, fact: ValueFact): boolean {
  const rest = afterKey(line, fact.key);
  if (rest === undefined) return false;
  if (typeof fact.value === 'number') return numbersIn(rest).includes(fact.value);
  const literal = typeof fact.value === 'boolean' ? `${fact.value}\\b` : `['"\`]${escape(fact.value)}['"\`]`;
  // A default is assigned or fallen back to (`??`, `||`, `=`, `:`), not compared against.
  const context = fact.conditional === true ? '\\?\\?|\\|\\|' : '\\?\\?|\\|\\||(?<![=!<>])=(?![=>])|:';
  return new RegExp(`(?:${context})\\s*${literal}`).test(rest);
}

/** Whether this text lists the enum's values, in the schema's order, as an array or a union. */
function listsEnum(text: string, values: readonly string[]): boolean {
  const quoted = values.map((v) => `['"]${escape(v)}['"]`);
  return new RegExp(quoted.join('\\s*[,|]\\s*')).test(text);
}

/**
 * Lines that write a schema's value next to a key of the same name for another reason. Each says
 * why; anything else the scan finds is a restatement to remove.
 */
const COINCIDENCES: readonly { file: string; line: string; why: string }[] = [
  {
    file: 'src/auth/host-check.ts',
    line: 'port > 65535',
    why: "TCP's port range, for the port of a Host or Origin header, not server.port",
  },
  {
    file: 'src/store/records/replay-attempt-repository.ts',
    line: 'attempt.responseStatus >= 100 && attempt.responseStatus <= 999',
    why: 'the replay_attempts CHECK (any three-digit status a consumer answers), wider than ReplayResult',
  },
  {
    file: 'src/postgres/free-port.ts',
    line: "host = '127.0.0.1'",
    why: "the embedded PostgreSQL's own loopback port, not server.host",
  },
  {
    file: 'src/trigger/trigger-sample.ts',
    line: 'options.timeoutMs ?? 10_000',
    why: "the trigger command's own HTTP timeout, not replay.timeout_ms",
  },
  {
    file: 'src/server/start-switchboard.ts',
    line: 'DEFAULT_DRAIN_TIMEOUT_MS = 10_000',
    why: "the shutdown drain's bound (SWITCHBOARD_DRAIN_TIMEOUT_MS), not replay.timeout_ms",
  },
  {
    file: 'src/verify/hmac.ts',
    line: "algorithm: 'sha256'",
    why: "compareSha256: the providers' own fixed schemes, not the generic-hmac default",
  },
  {
    file: 'test/support/raw-socket.ts',
    line: 'status >= 100 && status < 200',
    why: 'HTTP 1xx answers, which have no body, not a delivery attempt status bound',
  },
  {
    file: 'test/support/raw-socket.ts',
    line: 'timeoutMs = 10_000',
    why: "how long a test waits for a raw exchange's answer, not replay.timeout_ms",
  },
  {
    file: 'test/support/raw-socket.ts',
    line: 'options.timeoutMs ?? 10_000',
    why: "how long a test waits for a raw exchange's answer, not replay.timeout_ms",
  },
  {
    file: 'test/listen/support/fake-switchboard.ts',
    line: 'enabled: true,',
    why: "a fake server's list_providers answer about enabled providers, not the config default",
  },
];

function coincidence(file: string, line: string): boolean {
  return COINCIDENCES.some((c) => c.file === file && line.includes(c.line));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.tsx?$/.test(f) && !f.startsWith('ui/dist/'))
    .map((f) => join(dir, f));
}

/** The helpers tests stand on (test/support/, test/<area>/support/): they state the product's facts as often as src/ does. */
function testSupportFiles(): string[] {
  const test = join(root, 'test');
  return readdirSync(test, { recursive: true, encoding: 'utf8' })
    .filter((f) => /(^|\/)support\/.*\.ts$/.test(f) && !f.endsWith('.d.ts'))
    .map((f) => join(test, f));
}

/** Each provider's proof case (catalog/<name>/<name>.case.ts): test code that configures presets. */
function catalogFiles(): string[] {
  const catalog = join(root, 'catalog');
  return readdirSync(catalog, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(catalog, f));
}

/** Code lines only: a comment that explains a default is not a second source of it. */
function codeLines(text: string): { line: string; number: number }[] {
  return text
    .split('\n')
    .map((line, i) => ({ line, number: i + 1 }))
    .filter(({ line }) => !/^\s*(\/\/|\/\*|\*)/.test(line));
}

describe('the schema is the only source of defaults, limits and enums', () => {
  const { facts, enums } = schemaFacts();
  const support = testSupportFiles();
  const cases = catalogFiles();
  const files = [...sourceFiles(join(root, 'src')), ...support, ...cases];

  it('finds the facts and the files to look in', () => {
    expect(facts.length).toBeGreaterThan(30);
    expect(enums.length).toBeGreaterThan(10);
    expect(files.length).toBeGreaterThan(100);
    expect(support.map((f) => relative(root, f))).toEqual(
      expect.arrayContaining(['test/support/database.ts', 'test/fuzz/support/config-surface.ts']),
    );
    expect(cases.map((f) => relative(root, f))).toContain('catalog/stripe/stripe.case.ts');
  });

  it('recognises a restatement when it sees one', () => {
    const maxSessions: ValueFact = { key: 'max_sessions', value: 100, where: 'test' };
    expect(restates('    maxSessions: config.mcp?.max_sessions ?? 100,', maxSessions)).toBe(true);
    expect(restates('export const DEFAULT_MAX_SESSIONS = 100;', maxSessions)).toBe(true);
    expect(restates('    maxSessions: config.mcp.max_sessions,', maxSessions)).toBe(false);
    const maxBody: ValueFact = { key: 'max_body_bytes', value: 5_242_880, where: 'test' };
    expect(restates('export const DEFAULT_MAX_BODY_BYTES = 5 * 1024 * 1024;', maxBody)).toBe(true);
    const mode: ValueFact = { key: 'mode', value: 'pubsub', where: 'test', conditional: true };
    expect(restates("const mode = p.mode ?? 'pubsub';", mode)).toBe(true);
    expect(restates("if (p.mode === 'pubsub') return;", mode)).toBe(false);
    expect(restates("logger.child({ mode: 'pubsub' })", mode)).toBe(false);
    expect(restates('const port = match[2];', { key: 'match', value: 2, where: 'test' })).toBe(false);
    const enabled: ValueFact = { key: 'enabled', value: true, where: 'test' };
    expect(restates('enabled: p.enabled ?? true,', enabled)).toBe(true);
    expect(listsEnum("type T = 'signed' | 'token' | 'open' | 'queue';", ['signed', 'token', 'open', 'queue'])).toBe(
      true,
    );
    expect(listsEnum("['github',\n  'stripe']", ['github', 'stripe'])).toBe(true);
  });

  it('has no default or limit written next to its key in src/ or the test support', () => {
    const found: string[] = [];
    for (const file of files) {
      for (const { line, number } of codeLines(readFileSync(file, 'utf8'))) {
        if (coincidence(relative(root, file), line)) continue;
        for (const fact of facts) {
          if (restates(line, fact)) {
            found.push(
              `${relative(root, file)}:${number} restates ${fact.where} (${String(fact.value)}): ${line.trim()}`,
            );
          }
        }
      }
    }
    expect(found, 'read it from generated/constants.ts or let the validator fill it in').toEqual([]);
  });

  it('has no enum of the schemas listed by hand in src/ or the test support', () => {
    const found: string[] = [];
    for (const file of files) {
      const code = codeLines(readFileSync(file, 'utf8'))
        .map(({ line }) => line)
        .join('\n');
      for (const { values, where } of enums) {
        if (listsEnum(code, values)) found.push(`${relative(root, file)} lists ${where}: ${values.join(', ')}`);
      }
    }
    expect(found, 'import the list (or its type) from generated/constants.ts or generated/types.ts').toEqual([]);
  });
});

describe('config validation fills in the defaults', () => {
  const config: unknown = {
    providers: {
      hooks: { trust_mode: 'open' },
      jobs: { family: 'queue', channel: 'jobs' },
      legacy: { trust_mode: 'queue', channel: 'q' },
    },
  };
  const schema = SCHEMAS.SwitchboardConfig;

  it('gives every section and every provider the schema defaults', () => {
    expect(validateSwitchboardConfig(config), JSON.stringify(validateSwitchboardConfig.errors)).toBe(true);
    if (!validateSwitchboardConfig(config)) return;
    expect(config.mcp.max_sessions).toBe(schema.properties.mcp.properties.max_sessions.default);
    expect(config.replay.timeout_ms).toBe(schema.properties.replay.properties.timeout_ms.default);
    expect(config.retention.interval_seconds).toBe(schema.properties.retention.properties.interval_seconds.default);
    expect(config.server.port).toBe(schema.properties.server.properties.port.default);
    expect(config.rate_limits.replay.refill_per_second).toBe(
      schema.properties.rate_limits.properties.replay.properties.refill_per_second.default,
    );
    const provider = schema.$defs.provider.properties;
    expect(config.providers?.['hooks']).toMatchObject({
      family: 'webhook',
      enabled: provider.enabled.default,
      tolerance_seconds: provider.tolerance_seconds.default,
      max_body_bytes: provider.max_body_bytes.default,
      record_rejected: provider.record_rejected.default,
      replay: { resign: provider.replay.properties.resign.default },
    });
    expect(config.providers?.['hooks']).not.toHaveProperty('mode');
  });

  it('fills the queue-only keys for queue providers only, family following trust_mode', () => {
    if (!validateSwitchboardConfig(config)) throw new Error('invalid');
    expect(config.providers?.['jobs']).toMatchObject({
      family: 'queue',
      mode: 'pubsub',
      pattern: false,
      group: 'switchboard',
    });
    expect(config.providers?.['legacy']).toMatchObject({ family: 'queue', mode: 'pubsub' });
  });
});
