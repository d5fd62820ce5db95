/**
 * "did you mean …?" for a config file's mistakes: an unknown key is compared with the keys the
 * schema allows at that place, and a value outside an enum (`preset: twillio`) with the enum's
 * values, both read from the generated contract, so no list of names is written down here.
 */
import type { ErrorObject } from 'ajv';
import { SCHEMAS } from '../../generated/schemas.ts';
import { didYouMean } from '../shared/did-you-mean.ts';

type SchemaNode = Readonly<Record<string, unknown>>;

const ROOT: SchemaNode = SCHEMAS.SwitchboardConfig;

const isNode = (value: unknown): value is SchemaNode => typeof value === 'object' && value !== null;

/** A local `$ref` (`#/$defs/provider`) followed to its schema. */
function dereferenced(node: SchemaNode): SchemaNode {
  const ref = node.$ref;
  if (typeof ref !== 'string' || !ref.startsWith('#/')) return node;
  let found: unknown = ROOT;
  for (const part of ref.slice(2).split('/')) found = isNode(found) ? found[part] : undefined;
  return isNode(found) ? dereferenced(found) : node;
}

/** The schema a value at this JSON-pointer path of the config is checked against. */
function schemaAt(pointer: string): SchemaNode | undefined {
  let node: SchemaNode | undefined = ROOT;
  for (const raw of pointer.split('/').slice(1)) {
    if (node === undefined) return undefined;
    const part = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    const here: SchemaNode = dereferenced(node);
    const named = isNode(here.properties) ? here.properties[part] : undefined;
    const next = named ?? here.additionalProperties ?? here.items;
    node = isNode(next) ? next : undefined;
  }
  return node === undefined ? undefined : dereferenced(node);
}

/** The value at a JSON-pointer path of the config as written. */
function valueAt(document: unknown, pointer: string): unknown {
  let value = document;
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    value = isNode(value) ? value[part] : undefined;
  }
  return value;
}

/** The hint schemaErrorLines appends to one problem of this config, or undefined. */
export function configHint(document: unknown): (error: ErrorObject) => string | undefined {
  return (error) => {
    if (error.keyword === 'additionalProperties') {
      const extra = (error.params as { additionalProperty?: unknown }).additionalProperty;
      const properties = schemaAt(error.instancePath)?.properties;
      if (typeof extra !== 'string' || !isNode(properties)) return undefined;
      return didYouMean(extra, Object.keys(properties));
    }
    if (error.keyword === 'enum') {
      const given = valueAt(document, error.instancePath);
      const allowed = (error.params as { allowedValues?: unknown[] }).allowedValues ?? [];
      if (typeof given !== 'string') return undefined;
      return didYouMean(
        given,
        allowed.filter((v): v is string => typeof v === 'string'),
      );
    }
    return undefined;
  };
}
