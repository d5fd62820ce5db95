/**
 * tools/call in an open MCP session with fuzzed arguments: mostly valid ones with one field odd
 * (cursors, since values, limits past the schema's bounds), then random argument objects. Reads
 * and refused replays must store nothing.
 */
import fc from 'fast-check';
import { EVENT_PROVIDER_LIMITS, EVENT_TYPE_LIMITS, LIST_LIMIT } from '../../../generated/constants.ts';
import {
  anyJson,
  cursorArbitrary,
  eventIdArbitrary,
  limitAround,
  sinceArbitrary,
  targetUrlArbitrary,
  textAround,
  TOOL_NAMES,
} from './arbitraries.ts';
import { checkAnswer, jsonRpcMessages, openMcpSession, postInSession, sameSnapshot, seedEvents } from './fuzz-http.ts';
import { fail, type Surface } from './surface.ts';
import { FUZZ_PROVIDERS, tableSnapshot } from './target.ts';

/** What a tool call leaves as it was: a replay's audit row (replay_attempts) is written by design. */
const READ_ONLY_TABLES = ['events', 'api_tokens'];

export interface ToolCase {
  name: string;
  args: unknown;
}

export const toolsSurface: Surface<ToolCase> = {
  name: 'mcp-tools',
  prepare: async (target, state) => {
    await seedEvents(target, state);
    state.sessionId = await openMcpSession(target);
  },
  arbitrary: (target, state) => {
    const extra = fc.dictionary(fc.string({ maxLength: 10 }), anyJson, { maxKeys: 2 });
    // Mostly valid arguments with one field fuzzed, so the odd value gets past the schema check
    // into the store (cursor decoding, since parsing); then entirely random argument objects.
    const validBase = fc.record(
      {
        provider: fc.constantFrom(...FUZZ_PROVIDERS, 'nope'),
        event_type: fc.constantFrom('fuzz', 'fuzz.seed', 'other', 'a.b.c'),
        limit: fc.integer({ min: LIST_LIMIT.minimum, max: LIST_LIMIT.maximum }),
      },
      { requiredKeys: [] },
    );
    const oneOdd = fc.oneof(
      cursorArbitrary(state).map((cursor) => ({ cursor })),
      cursorArbitrary(state).map((cursor) => ({ cursor, since: state.eventIds[0] ?? 'x' })),
      sinceArbitrary.map((since) => ({ since })),
      fc.constantFrom(...(state.eventIds.length ? state.eventIds : ['x'])).map((since) => ({ since })),
      fc.oneof(limitAround, fc.double(), fc.constantFrom('10', 0, 1e308, -0)).map((limit) => ({ limit })),
      textAround(EVENT_PROVIDER_LIMITS).map((provider) => ({ provider })),
      textAround(EVENT_TYPE_LIMITS).map((event_type) => ({ event_type })),
    );
    const anyList = fc.record(
      {
        provider: anyJson,
        event_type: anyJson,
        since: fc.oneof(sinceArbitrary, anyJson),
        limit: anyJson,
        cursor: fc.oneof(cursorArbitrary(state), anyJson),
      },
      { requiredKeys: [] },
    );
    const listArgs = fc.oneof(
      { weight: 4, arbitrary: fc.tuple(validBase, oneOdd).map(([base, odd]) => ({ ...base, ...odd })) },
      { weight: 1, arbitrary: anyList },
    );
    return fc.oneof(
      {
        weight: 5,
        arbitrary: fc
          .tuple(listArgs, fc.option(extra))
          .map(([a, e]) => ({ name: 'list_webhook_events', args: e === null ? a : { ...a, ...e } })),
      },
      {
        weight: 3,
        arbitrary: fc
          .record({ id: eventIdArbitrary(state) }, { requiredKeys: [] })
          .map((args) => ({ name: 'get_webhook_event', args })),
      },
      {
        weight: 3,
        arbitrary: fc
          .record({ id: eventIdArbitrary(state), target_url: targetUrlArbitrary(target) }, { requiredKeys: [] })
          .map((args) => ({ name: 'replay_webhook_event', args })),
      },
      { weight: 1, arbitrary: fc.option(extra).map((args) => ({ name: 'list_providers', args: args ?? {} })) },
      {
        weight: 1,
        arbitrary: fc.record({
          name: fc.constantFrom(...TOOL_NAMES, 'unknown_tool', ''),
          args: anyJson,
        }),
      },
    );
  },
  run: async (target, state, input) => {
    const before = await tableSnapshot(target.pool, READ_ONLY_TABLES);
    const answer = await postInSession(target, state.sessionId, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: input.name, arguments: input.args },
    });
    checkAnswer(`tools/call ${input.name}`, answer);
    if (answer.status !== 200) fail(`tools/call ${input.name}: HTTP ${answer.status}: ${answer.text.slice(0, 300)}`);
    const [message] = jsonRpcMessages(answer) as Array<{
      result?: { isError?: boolean; content?: Array<{ text?: string }>; structuredContent?: { next_cursor?: string } };
      error?: { code: number };
    }>;
    if (message === undefined) fail(`tools/call ${input.name}: no JSON-RPC answer: ${answer.text.slice(0, 300)}`);
    // Reads and refused replays store nothing (a replay's audit row is replay_attempts, by design).
    sameSnapshot(
      `tools/call ${input.name}`,
      before,
      await tableSnapshot(target.pool, READ_ONLY_TABLES),
      READ_ONLY_TABLES,
    );
    const next = message.result?.structuredContent?.next_cursor;
    if (typeof next === 'string' && state.cursors.length < 50) state.cursors.push(next);
    if (message.error !== undefined) return `jsonrpc ${message.error.code}`;
    if (message.result?.isError === true) {
      const code = /"code"\s*:\s*"([a-z_]+)"/.exec(message.result.content?.[0]?.text ?? '')?.[1] ?? '?';
      return `${input.name} ${code}`;
    }
    return `${input.name} ok`;
  },
};
