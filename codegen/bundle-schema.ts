/** Inlines cross-file $refs so a schema stands alone: MCP clients and OpenAPI readers resolve no files. */

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };
export type SchemaRegistry = Map<string, JsonObject>;

export interface BundleOptions {
  /** Output schemas drop nested descriptions to keep tools/list inside the agent's context budget. */
  keepNestedDescriptions: boolean;
  /**
   * Output schemas drop string and array length bounds too, for the same budget: a client that
   * validates a result against a looser schema can only accept more, and the server validates
   * every result against the full schema (with its bounds) before sending it.
   */
  keepLengthBounds: boolean;
  /**
   * Output schemas drop enums longer than LONG_ENUM values (the catalog's preset names), for the
   * same budget and on the same ground: the value's type stays, and the server validates every
   * result against the full enum before sending it.
   */
  keepLongEnums: boolean;
  /**
   * Output schemas drop numeric bounds (minimum, maximum, exclusive ones) and, below the root,
   * `additionalProperties: false`, string patterns and `propertyNames`, for the same budget and on the same ground: a looser schema only
   * accepts more, and the server checks every result against the full one before sending it.
   */
  keepStrictness: boolean;
}

const LONG_ENUM = 16;

const LENGTH_BOUNDS = new Set(['minLength', 'maxLength', 'minItems', 'maxItems']);

const NUMERIC_BOUNDS = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']);

const STRING_SHAPES = new Set(['pattern', 'propertyNames']);

const DROPPED_WHEN_INLINED = new Set(['$schema', '$id', '$comment']);

function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function resolvePointer(doc: JsonObject, pointer: string): JsonValue {
  let node: JsonValue = doc;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (!isObject(node) || !(key in node)) throw new Error(`unresolvable JSON pointer ${pointer}`);
    node = node[key] as JsonValue;
  }
  return node;
}

function resolveRef(ref: string, base: string, registry: SchemaRegistry): { node: JsonValue; base: string } {
  const url = new URL(ref, base);
  const docId = `${url.origin}${url.pathname}`;
  const doc = registry.get(docId);
  if (!doc) throw new Error(`$ref ${ref} (from ${base}) names no known schema`);
  const pointer = decodeURIComponent(url.hash.replace(/^#/, ''));
  return { node: pointer ? resolvePointer(doc, pointer) : doc, base: docId };
}

function walk(
  node: JsonValue,
  base: string,
  registry: SchemaRegistry,
  options: BundleOptions,
  depth: number,
): JsonValue {
  if (Array.isArray(node)) return node.map((n) => walk(n, base, registry, options, depth));
  if (!isObject(node)) return node;
  let current: JsonObject = node;
  let currentBase = base;
  const ref = current.$ref;
  if (typeof ref === 'string') {
    const target = resolveRef(ref, currentBase, registry);
    if (!isObject(target.node)) throw new Error(`$ref ${ref} does not point at a schema object`);
    // Sibling keywords (a local description, say) win over the referenced schema's own.
    const { $ref: _ignored, ...siblings } = current;
    current = { ...target.node, ...siblings };
    currentBase = target.base;
  }
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(current)) {
    if (depth > 0 && DROPPED_WHEN_INLINED.has(key)) continue;
    if (depth > 0 && !options.keepNestedDescriptions && (key === 'description' || key === 'title')) continue;
    if (!options.keepLengthBounds && LENGTH_BOUNDS.has(key)) continue;
    if (!options.keepLongEnums && key === 'enum' && Array.isArray(value) && value.length > LONG_ENUM) continue;
    if (!options.keepStrictness && NUMERIC_BOUNDS.has(key) && typeof value === 'number') continue;
    if (!options.keepStrictness && depth > 0 && key === 'additionalProperties' && value === false) continue;
    if (!options.keepStrictness && depth > 0 && STRING_SHAPES.has(key)) continue;
    // Under properties/$defs the keys are names, not keywords: never treat them as such.
    if ((key === 'properties' || key === '$defs') && isObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, sub]) => [name, walk(sub, currentBase, registry, options, depth + 1)]),
      );
    } else {
      out[key] = walk(value, currentBase, registry, options, depth + 1);
    }
  }
  return out;
}

export function bundleSchema(schema: JsonObject, registry: SchemaRegistry, options: BundleOptions): JsonObject {
  const id = schema.$id;
  if (typeof id !== 'string') throw new Error('bundleSchema needs a schema with an $id');
  const bundled = walk(schema, id, registry, options, 0);
  if (!isObject(bundled)) throw new Error('bundled schema is not an object');
  const { $schema: _s, $id: _i, ...rest } = bundled;
  return rest;
}
