/**
 * The arbitraries more than one surface draws from: any JSON, cursors (valid ones seen so far,
 * mutated), since values, event ids, and replay targets that never leave this machine.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { LIST_LIMIT } from '../../../generated/constants.ts';
import { TOOL_MANIFEST } from '../../../generated/tool-manifest.ts';
import type { SurfaceState } from './surface.ts';
import type { FuzzTarget } from './target.ts';

/** The MCP tools, from the manifest generated out of schemas/tools/. */
export const TOOL_NAMES = TOOL_MANIFEST.map((tool) => tool.name);

/** Text up to a little past a schema's maxLength, so both sides of the bound are tried. */
export const textAround = (limits: { maxLength: number }): fc.Arbitrary<string> =>
  fc.string({ maxLength: limits.maxLength + 10 });

/** A page size from below the schema's minimum to past its maximum. */
export const limitAround = fc.integer({ min: LIST_LIMIT.minimum - 6, max: LIST_LIMIT.maximum * 1.25 });

export const anyJson = fc.jsonValue({ maxDepth: 3 });
const shortText = fc.string({ maxLength: 80, unit: 'binary' });

/** A valid cursor with one character changed, truncated or extended. */
const mutate = (text: string): fc.Arbitrary<string> =>
  fc.oneof(
    fc
      .nat({ max: Math.max(0, text.length - 1) })
      .chain((i) =>
        fc
          .constantFrom('A', '_', '-', '=', '/', '+', '%', '\u00e9')
          .map((c) => text.slice(0, i) + c + text.slice(i + 1)),
      ),
    fc.nat({ max: text.length }).map((i) => text.slice(0, i)),
    shortText.map((extra) => text + extra),
  );

export function cursorArbitrary(state: SurfaceState): fc.Arbitrary<string> {
  const valid = fc.constantFrom(
    ...(state.cursors.length > 0 ? state.cursors : ['AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']),
  );
  return fc.oneof(
    valid,
    valid.chain(mutate),
    fc.base64String({ minLength: 36, maxLength: 44 }),
    fc.stringMatching(/^[A-Za-z0-9_-]{39}$/),
    fc.string({ minLength: 1, maxLength: 600 }),
    fc.constantFrom('', ' ', 'null', '0', '-1', '%00', '\u0000', 'AAAA'.repeat(200)),
  );
}

export const sinceArbitrary: fc.Arbitrary<string> = fc.oneof(
  fc.date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true }).map((d) => d.toISOString()),
  fc
    .date({ min: new Date('1900-01-01'), max: new Date('2200-01-01'), noInvalidDate: true })
    .map((d) => d.toISOString().replace('Z', '+14:00')),
  fc.constantFrom(
    '2024-13-45T25:61:61Z',
    '0000-00-00T00:00:00Z',
    '-271821-04-20T00:00:00Z',
    '+275760-09-13T00:00:00.000Z',
    '9999-12-31T23:59:59.999999999Z',
    '2024-02-30T00:00:00Z',
    '1970-01-01',
    'yesterday',
    '5m',
    'NaN',
    'Infinity',
    '00000000-0000-0000-0000-000000000000',
    'ffffffff-ffff-ffff-ffff-ffffffffffff',
  ),
  fc.uuid(),
  fc.string({ minLength: 1, maxLength: 70 }),
  fc.integer().map(String),
);

export function eventIdArbitrary(state: SurfaceState): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...(state.eventIds.length > 0 ? state.eventIds : [randomUUID()])) },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: fc.uuid().map((u) => u.toUpperCase()) },
    { weight: 1, arbitrary: fc.string({ maxLength: 64 }) },
    { weight: 1, arbitrary: anyJson },
  );
}

/**
 * Replay targets kept on this machine: the local consumer, a closed loopback port, switchboard
 * itself (a loop it must refuse), and strings that are not acceptable URLs at all. No other host
 * names or addresses are generated, so a fuzzed replay can never send traffic anywhere else.
 */
export function targetUrlArbitrary(target: FuzzTarget): fc.Arbitrary<unknown> {
  const path = fc.stringMatching(/^[a-zA-Z0-9/_.~%-]{0,40}$/);
  return fc.oneof(
    path.map((p) => `http://127.0.0.1:${target.consumerPort}/${p}`),
    path.map((p) => `http://localhost:${target.consumerPort}/${p}`),
    path.map((p) => `http://[::1]:${target.consumerPort}/${p}`),
    fc.constant(`http://127.0.0.1:${target.closedPort}/`),
    fc
      .constantFrom('/hooks/github', '/hooks/open', '/mcp', '/HOOKS/open', '/%68ooks/open')
      .map((p) => `http://127.0.0.1:${target.port}${p}`),
    fc.constantFrom(
      'ftp://127.0.0.1/',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'http://',
      'http://127.0.0.1:0/',
      'http://127.0.0.1:99999/',
      'http://user:pass@127.0.0.1/',
      '127.0.0.1',
      'http://[::ffff:127.0.0.1]:1/',
      'http://0x7f.1:1/',
      '',
    ),
    // Random text: a URL needs "scheme://" to reach name resolution, which these never have.
    fc.string({ maxLength: 100 }).filter((s) => !s.includes('://')),
    anyJson,
  );
}
