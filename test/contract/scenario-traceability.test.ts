import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const spec = readFileSync(join(root, 'docs/openspec/specs/mcp-tools/spec.md'), 'utf8');
const pendingFile = join(import.meta.dirname, 'pending-scenarios.json');
const pending = JSON.parse(readFileSync(pendingFile, 'utf8')) as { pending: string[] };

const scenarios = [...spec.matchAll(/^#### Scenario: (.+)$/gm)].map((m) => (m[1] ?? '').trim());

function testNames(): string[] {
  const files = readdirSync(join(root, 'test'), { recursive: true, encoding: 'utf8' }).filter((f) =>
    f.endsWith('.test.ts'),
  );
  const names: string[] = [];
  const call = /\b(?:it|test|describe)(?:\.(?:each\([^)]*\)|concurrent|sequential))?\(\s*(['"`])((?:\\.|(?!\1).)*)\1/g;
  for (const file of files) {
    const text = readFileSync(join(root, 'test', file), 'utf8');
    for (const m of text.matchAll(call)) names.push(m[2] ?? '');
  }
  return names;
}

describe('scenario traceability', () => {
  const names = testNames();
  const untested = scenarios.filter((s) => !names.some((n) => n.includes(s)));

  it('finds the scenarios of the MCP contract', () => {
    expect(scenarios.length).toBeGreaterThanOrEqual(20);
    expect(new Set(scenarios).size).toBe(scenarios.length);
  });

  it('every scenario has a test that names it, or is listed as pending', () => {
    process.stdout.write(
      `scenario traceability: ${scenarios.length - untested.length} tested, ${pending.pending.length} pending\n`,
    );
    expect(untested.filter((s) => !pending.pending.includes(s))).toEqual([]);
  });

  it('the pending list names only real, still-untested scenarios', () => {
    expect(pending.pending.filter((s) => !scenarios.includes(s))).toEqual([]);
    expect(pending.pending.filter((s) => !untested.includes(s))).toEqual([]);
  });
});
