import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TOOL_MANIFEST } from '../../generated/tool-manifest.ts';

const schemasDir = join(import.meta.dirname, '../../schemas');
const files = readdirSync(schemasDir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.schema.json'));

type Node = Record<string, unknown>;

function objectsWithoutClosedProperties(node: unknown, path: string, out: string[]): void {
  if (Array.isArray(node)) {
    node.forEach((n, i) => objectsWithoutClosedProperties(n, `${path}/${i}`, out));
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const obj = node as Node;
  // A map (headers, providers) is closed through additionalProperties holding a schema instead.
  if (obj.properties !== undefined && obj.additionalProperties !== false) out.push(path);
  for (const [k, v] of Object.entries(obj)) {
    // if/then/else refine an object that is already closed (conditions, conditional defaults).
    if (k === 'if' || k === 'then' || k === 'else') continue;
    objectsWithoutClosedProperties(v, `${path}/${k}`, out);
  }
}

/** Paths of every `type` written as a list (`["string", "null"]`) rather than one name. */
function typeLists(node: unknown, path: string, out: string[]): void {
  if (Array.isArray(node)) {
    node.forEach((n, i) => typeLists(n, `${path}/${i}`, out));
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  for (const [k, v] of Object.entries(node as Node)) {
    if (k === 'type' && Array.isArray(v)) out.push(path);
    typeLists(v, `${path}/${k}`, out);
  }
}

describe('schema conventions', () => {
  it('finds the schemas', () => {
    expect(files.length).toBeGreaterThanOrEqual(19);
  });

  for (const file of files) {
    it(`${file} is draft 2020-12 with $id, title, description and closed objects`, () => {
      const schema = JSON.parse(readFileSync(join(schemasDir, file), 'utf8')) as Node;
      expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
      expect(schema.$id).toBe(`https://switchboard.dev/schemas/${relative('.', file)}`);
      expect(typeof schema.title).toBe('string');
      expect(String(schema.description).length).toBeGreaterThan(10);
      const open: string[] = [];
      objectsWithoutClosedProperties(schema, '', open);
      expect(open).toEqual([]);
    });
  }

  it('writes nullable fields as anyOf [{type}, {type: null}], never as a type list, in schemas/, the tool manifest and the OpenAPI document', () => {
    // MCP clients that map tool schemas onto a single-type dialect (the Inspector flags it as not
    // portable) reject or loosen a `type: [..., "null"]`.
    const found: string[] = [];
    for (const file of files) typeLists(JSON.parse(readFileSync(join(schemasDir, file), 'utf8')), file, found);
    for (const tool of TOOL_MANIFEST) typeLists(tool, `manifest:${tool.name}`, found);
    const openApi: unknown = JSON.parse(readFileSync(join(schemasDir, '../docs/reference/openapi.json'), 'utf8'));
    typeLists(openApi, 'openapi.json', found);
    expect(found).toEqual([]);
  });
});
