/**
 * parseConfig on hostile text: configs built from the schema's own keys and enums (generated/),
 * cut short, random text, and YAML that is not plain data. Whatever the text, parseConfig returns
 * a config or throws ConfigError, never anything else.
 */
import fc from 'fast-check';
import { ConfigError } from '../../../src/config/config-error.ts';
import { parseConfig } from '../../../src/config/load-config.ts';
import { SCHEMAS } from '../../../generated/schemas.ts';
import { anyJson } from './arbitraries.ts';
import { fail, type Surface } from './surface.ts';

type SchemaNode = { [keyword: string]: unknown };
const isNode = (value: unknown): value is SchemaNode => typeof value === 'object' && value !== null;

/** Every string an enum of this schema allows, anywhere below it (presets, trust modes, families…). */
function enumStrings(node: unknown): string[] {
  if (!isNode(node)) return [];
  const own = Array.isArray(node.enum) ? node.enum.filter((v): v is string => typeof v === 'string') : [];
  return [...new Set([...own, ...Object.values(node).flatMap(enumStrings)])];
}

const propertiesOf = (node: unknown): Array<[string, unknown]> =>
  isNode(node) && isNode(node.properties) ? Object.entries(node.properties) : [];

const CONFIG_SCHEMA = SCHEMAS.SwitchboardConfig;
const PROVIDER_SCHEMA = CONFIG_SCHEMA.$defs.provider;
const PROVIDER_KEYS = propertiesOf(PROVIDER_SCHEMA).map(([key]) => key);

const configValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...enumStrings(CONFIG_SCHEMA)),
  fc.constantFrom(
    true,
    false,
    0,
    -1,
    1e10,
    null,
    '${SECRET}',
    '${MISSING}',
    '$${ESCAPED}',
    '${',
    '/hooks/x',
    '/mcp',
    '/api/x',
    'header:X-Id',
    '/id',
    '{timestamp}.{body}',
    '{header:X}',
    '{nope}',
    '{',
    '30d',
    '0s',
    '999999999999999999d',
    '1x',
  ),
  fc.string({ maxLength: 30 }),
  fc.integer(),
  anyJson,
);

/**
 * An object of the schema's own keys (nested as the schema nests them), each value an enum member,
 * a value of the wrong kind, or any of configValue; or, as often, not an object at all.
 */
function schemaObject(node: unknown, depth = 0): fc.Arbitrary<unknown> {
  const properties = propertiesOf(node);
  // Only this node's own enum: one below it belongs to a property of its own.
  const values = isNode(node) ? enumStrings({ enum: node.enum }) : [];
  const leaf = values.length > 0 ? fc.oneof(fc.constantFrom(...values, 'not-one-of-them'), configValue) : configValue;
  if (properties.length === 0 || depth > 2) return leaf;
  return fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record(Object.fromEntries(properties.map(([key, sub]) => [key, schemaObject(sub, depth + 1)])), {
        requiredKeys: [],
      }),
    },
    { weight: 1, arbitrary: leaf },
  );
}

/** A few keys, mostly the schema's, with any values; or every key of the schema with fitting ones. */
const providerObject = fc.oneof(
  fc.dictionary(
    fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(...PROVIDER_KEYS) },
      { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
    ),
    fc.oneof(configValue, schemaObject(PROVIDER_SCHEMA.properties.hmac)),
    { maxKeys: 6 },
  ),
  schemaObject(PROVIDER_SCHEMA),
);

const configObject = fc.record(
  {
    ...Object.fromEntries(propertiesOf(CONFIG_SCHEMA).map(([key, sub]) => [key, schemaObject(sub)])),
    providers: fc.oneof(
      fc.dictionary(
        fc.oneof(fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,10}$/), fc.string({ maxLength: 10 })),
        providerObject,
        { maxKeys: 4 },
      ),
      anyJson,
    ),
    extra: anyJson,
  },
  { requiredKeys: [] },
);

export interface ConfigCase {
  text: string;
  env: Record<string, string>;
}

export const configSurface: Surface<ConfigCase> = {
  name: 'config',
  arbitrary: () =>
    fc.record({
      text: fc.oneof(
        { weight: 5, arbitrary: configObject.map((c) => JSON.stringify(c)) },
        {
          weight: 2,
          arbitrary: configObject.chain((c) =>
            fc.nat().map((cut) => {
              const t = JSON.stringify(c);
              return t.slice(0, cut % (t.length + 1));
            }),
          ),
        },
        { weight: 2, arbitrary: fc.string({ maxLength: 300 }) },
        { weight: 1, arbitrary: fc.string({ maxLength: 300, unit: 'binary' }) },
        {
          weight: 2,
          arbitrary: fc.constantFrom(
            // YAML features that are not plain data: aliases (and an alias bomb), tags, merges,
            // documents, deep nesting, duplicate keys.
            'a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n',
            'providers:\n  gh: &p {preset: github, secret: x}\n  gh2: *p\n',
            'providers: !!binary aGVsbG8=\n',
            'providers: !!set {a, b}\n',
            'providers: !!omap [a: 1]\n',
            'providers: !custom {a: 1}\n',
            'providers: !!js/function "function(){}"\n',
            '<<: {providers: {}}\n',
            'providers:\n  gh:\n    <<: {preset: github}\n    secret: s\n',
            '---\nproviders: {}\n---\nproviders: {}\n',
            'providers: {a: 1}\nproviders: {b: 2}\n',
            `providers: ${'['.repeat(3_000)}${']'.repeat(3_000)}\n`,
            `providers: ${'{a: '.repeat(2_000)}1${'}'.repeat(2_000)}\n`,
            'providers: {gh: {preset: github, secret: "${SECRET}"}}\n',
            'providers: {gh: {preset: github, secret: "${NOPE}"}}\n',
            'providers: {gh: {preset: github, secret: "${}"}}\n',
            'providers: {gh: {preset: generic-hmac, hmac: {header: X, signed: "{header:}"}}}\n',
            'providers: {gh: {preset: generic-hmac, hmac: {header: X, secret_encoding: base64}, secret: "***"}}\n',
            'providers: {q: {family: queue, channel: "", mode: streams}}\n',
            'providers: {"__proto__": {preset: open}}\n',
            'providers: {constructor: {preset: open}}\n',
            'replay: {allow: ["10.0.0.0/33", "::/999", "not a host", ""]}\n',
            'retention: {max_age: "99999999999999999999w"}\n',
            '\ufeffproviders: {}\n',
            '\u0000',
            '%YAML 9.9\n---\na: 1\n',
            '? [a, b]\n: c\n',
            'a: 1e999\n',
            'server: {port: 0x1F90}\n',
          ),
        },
      ),
      env: fc.record({
        SECRET: fc.string({ maxLength: 20 }),
        OTHER: fc.oneof(fc.constant('${SECRET}'), fc.string({ maxLength: 20 })),
      }),
    }),
  run: async (_target, _state, input) => {
    try {
      parseConfig(input.text, input.env);
      return 'accepted';
    } catch (err) {
      if (err instanceof ConfigError) return 'ConfigError';
      const name = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      fail(`parseConfig threw ${name.slice(0, 300)} for ${JSON.stringify(input.text.slice(0, 200))}`);
    }
  },
};
