/** Query strings on GET /api/events: fuzzed cursors, since values, limits and filters. Nothing is stored. */
import fc from 'fast-check';
import { SCHEMAS } from '../../../generated/schemas.ts';
import { EVENT_PROVIDER_LIMITS, EVENT_TYPE_LIMITS, SEARCH_TEXT_LIMITS } from '../../../generated/constants.ts';
import { anyJson, cursorArbitrary, limitAround, sinceArbitrary, textAround } from './arbitraries.ts';
import { checkAnswer, sameSnapshot, seedEvents, send } from './fuzz-http.ts';
import type { Surface } from './surface.ts';
import { STORED_TABLES, tableSnapshot } from './target.ts';

export interface QueryCase {
  params: Array<[string, string]>;
}

export const apiQuerySurface: Surface<QueryCase> = {
  name: 'api-query',
  prepare: seedEvents,
  arbitrary: (_target, state) =>
    fc.record({
      params: fc.array(
        fc.oneof(
          cursorArbitrary(state).map((v) => ['cursor', v] as [string, string]),
          sinceArbitrary.map((v) => ['since', v] as [string, string]),
          fc.oneof(limitAround.map(String), fc.string({ maxLength: 8 })).map((v) => ['limit', v] as [string, string]),
          textAround(EVENT_PROVIDER_LIMITS).map((v) => ['provider', v] as [string, string]),
          textAround(EVENT_TYPE_LIMITS).map((v) => ['event_type', v] as [string, string]),
          textAround(SEARCH_TEXT_LIMITS).map((v) => ['q', v] as [string, string]),
          fc
            .oneof(
              anyJson.map((v) => JSON.stringify(v) ?? ''),
              fc.string({ maxLength: 50 }),
            )
            .map((v) => ['match', v] as [string, string]),
          sinceArbitrary.map((v) => ['from', v] as [string, string]),
          sinceArbitrary.map((v) => ['to', v] as [string, string]),
          fc
            .constantFrom(...SCHEMAS.SearchEventsQuery.properties.verified.enum, '1', 'yes', '')
            .map((v) => ['verified', v] as [string, string]),
          fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })),
        ),
        { maxLength: 5 },
      ),
    }),
  run: async (target, _state, input) => {
    const query = new URLSearchParams(input.params).toString();
    const before = await tableSnapshot(target.pool);
    const answer = await send(target, 'GET', `/api/events?${query}`, { authorization: `Bearer ${target.token}` });
    checkAnswer(`GET /api/events?${query}`, answer);
    sameSnapshot('GET /api/events', before, await tableSnapshot(target.pool), STORED_TABLES);
    return `${answer.status}`;
  },
};
