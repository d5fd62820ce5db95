import type { ParsedUrlQuery } from 'node:querystring';
import { SEARCH_MATCH_LIMITS, SEARCH_TEXT_LIMITS } from '../../generated/constants.ts';
import type { ListWebhookEventsInput, SearchEventsQuery } from '../../generated/types.ts';
import { validateListWebhookEventsInput } from '../../generated/validators.js';
import { invalidArgument } from '../errors/app-error.ts';
import { describeSchemaErrors } from '../errors/schema-errors.ts';
import type { ListQuery } from '../store/events/event-store.ts';
import { listQueryFromInput } from '../store/events/list-statement.ts';
import { apiInputKeys } from './tool-inputs.ts';

/** The list_webhook_events inputs the API takes, from the tool's schema. */
const INPUT_KEYS = apiInputKeys('list_webhook_events');

/** The query-string forms of schemas/search-events-query.schema.json that are not tool inputs. */
type WindowKey = Exclude<keyof SearchEventsQuery, keyof ListWebhookEventsInput>;

/**
 * How each key of schemas/search-events-query.schema.json is read from its query-string form, in
 * the schema's order. Typed over the generated SearchEventsQuery, so a key the schema gains or
 * loses fails to compile here rather than being silently ignored or refused.
 */
const QUERY_FORMS: { readonly [K in keyof Required<SearchEventsQuery>]: (text: string) => unknown } = {
  q: searchText,
  match: matchObject,
  from: (text) => timestamp('from', text),
  to: (text) => timestamp('to', text),
  verified: verifiedFlag,
};
const FORM_KEYS = Object.keys(QUERY_FORMS) as ReadonlyArray<keyof SearchEventsQuery>;
/** The forms that are tool inputs too (q, match, verified): read, then checked by the tool's validator. */
const SEARCH_KEYS = FORM_KEYS.filter((key) => INPUT_KEYS.includes(key));
/** The rest (from, to): the window only the HTTP API has. */
const WINDOW_KEYS = FORM_KEYS.filter((key): key is WindowKey => !SEARCH_KEYS.includes(key));
/** The inputs that travel as plain strings (limit is read as a number). */
const LIST_KEYS = INPUT_KEYS.filter((key) => !(SEARCH_KEYS as readonly string[]).includes(key));
const KNOWN = new Set<string>([...INPUT_KEYS, ...FORM_KEYS]);

// The bounds of schemas/search-events-query.schema.json, which the OpenAPI document publishes.
const { maxLength: Q_MAX } = SEARCH_TEXT_LIMITS;
const { minLength: MATCH_MIN, maxLength: MATCH_MAX } = SEARCH_MATCH_LIMITS;
// RFC 3339 date-time, offset required: a bare local time would mean a different instant per server.
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

function single(query: ParsedUrlQuery, key: string): string | undefined {
  const value = query[key];
  if (Array.isArray(value)) throw invalidArgument(`${key}: give it once`);
  return value;
}

/** limit stays a string unless it is a plain integer, so the schema (not Number()) decides what is wrong with it. */
function limitValue(text: string): number | string {
  return /^-?\d{1,6}$/.test(text) ? Number(text) : text;
}

function timestamp(key: string, text: string): string {
  if (!RFC3339.test(text) || Number.isNaN(Date.parse(text))) {
    throw invalidArgument(`${key}: expected an RFC 3339 date-time such as 2025-01-31T12:00:00Z`);
  }
  return text;
}

function searchText(q: string): string {
  if (q.trim().length === 0 || q.length > Q_MAX)
    throw invalidArgument(`q: expected ${SEARCH_TEXT_LIMITS.minLength} to ${Q_MAX} characters`);
  return q;
}

function verifiedFlag(verified: string): boolean {
  if (verified !== 'true' && verified !== 'false') throw invalidArgument('verified: expected true or false');
  return verified === 'true';
}

function matchObject(text: string): Record<string, unknown> {
  if (text.length < MATCH_MIN || text.length > MATCH_MAX) {
    throw invalidArgument(`match: expected a JSON object of ${MATCH_MIN} to ${MATCH_MAX} characters`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidArgument('match: not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw invalidArgument('match: expected a JSON object, e.g. {"action":"opened"}');
  }
  return parsed as Record<string, unknown>;
}

/**
 * Turns /api/events query parameters into the store's ListQuery. Every list_webhook_events input
 * (search included, once its query-string form is read) goes through the tool's generated
 * validator and listQueryFromInput, so the API accepts exactly what the MCP tool accepts.
 */
export function parseListQuery(query: ParsedUrlQuery): ListQuery {
  for (const key of Object.keys(query)) {
    // Unknown parameters are refused rather than ignored: a typo must not silently widen a search.
    if (!KNOWN.has(key)) throw invalidArgument(`unknown query parameter ${key}`);
  }
  const input: Record<string, unknown> = {};
  for (const key of LIST_KEYS) {
    const value = single(query, key);
    if (value !== undefined) input[key] = key === 'limit' ? limitValue(value) : value;
  }
  for (const key of SEARCH_KEYS) {
    const value = single(query, key);
    if (value !== undefined) input[key] = QUERY_FORMS[key](value);
  }
  if (!validateListWebhookEventsInput(input)) {
    throw invalidArgument(describeSchemaErrors(validateListWebhookEventsInput.errors, 'query'));
  }
  const result = listQueryFromInput(input);

  for (const key of WINDOW_KEYS) {
    const value = single(query, key);
    if (value !== undefined) result[key] = QUERY_FORMS[key](value) as string;
  }
  if (result.from !== undefined && result.to !== undefined && Date.parse(result.from) >= Date.parse(result.to)) {
    throw invalidArgument('from: must be earlier than to');
  }
  return result;
}
