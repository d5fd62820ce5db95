/**
 * The API's event detail is EventDetail plus what only the API shows (sender_hint): a field added
 * to EventDetail must reach /api/events/{id} too, or the API's closed schema would refuse it.
 */
import { describe, expect, it } from 'vitest';
import { SCHEMAS } from '../../generated/schemas.ts';

const propertiesOf = (schema: unknown): string[] =>
  Object.keys((schema as { properties: Record<string, unknown> }).properties).sort();

describe('ApiEventDetail', () => {
  it('has every EventDetail property, and only sender_hint besides', () => {
    const api = propertiesOf(SCHEMAS.ApiEventDetail);
    const mcp = propertiesOf(SCHEMAS.EventDetail);
    expect(mcp.filter((name) => !api.includes(name))).toEqual([]);
    expect(api.filter((name) => !mcp.includes(name))).toEqual(['sender_hint']);
  });
});
