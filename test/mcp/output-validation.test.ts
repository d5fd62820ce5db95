import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventStore } from '../../src/store/events/event-store.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';
import { startMcpHarness, type Harness } from './support/switchboard-harness.ts';
import { callError } from './support/tool-calls.ts';

let db: TestDatabase;
let h: Harness;
let eventId = '';

beforeAll(async () => {
  db = await freshDatabase();
  const real = createEventStore(db.pool);
  eventId = (await real.insert(newEvent({ provider: 'github' }))).event.id;
  // The real store, with its answers bent out of the contract the way a bug in a mapper would.
  const drifting: EventStore = {
    ...real,
    listWithSummaries: async (query) => {
      const page = await real.listWithSummaries(query);
      return {
        ...page,
        events: page.events.map((e) => ({ ...e, trust_mode: 'trusted-by-vibes' as 'signed', summary: 'leaked body' })),
      };
    },
    get: async (id) => {
      const stored = await real.get(id);
      return stored === null ? null : { ...stored, trustMode: 'trusted-by-vibes' as 'signed' };
    },
  };
  h = await startMcpHarness({ db, store: drifting });
});
afterAll(async () => {
  await h?.close();
  await db?.close();
});

describe('output validation', () => {
  it('logs a result that breaks its output schema and answers internal instead of sending it', async () => {
    const client = await h.connect();
    for (const [name, args] of [
      ['list_webhook_events', {}],
      ['get_webhook_event', { id: eventId }],
    ] as const) {
      const result = await client.callTool({ name, arguments: args });
      expect(JSON.stringify(result)).not.toContain('leaked body');
      expect(JSON.stringify(result)).not.toContain('trusted-by-vibes');
      const error = await callError(client, name, args);
      expect(error.code).toBe('internal');
      const reference = /reference ([0-9a-f-]{36})/.exec(error.message)?.[1];
      const logged = h.logs.find((line) => line.correlationId === reference);
      expect(logged).toMatchObject({
        level: 50,
        tool: name,
        msg: expect.stringMatching(/does not match its output schema/),
      });
      expect(String(logged?.schemaErrors)).toMatch(/payload: unknown field|trust_mode/);
    }
    await expect(client.readResource({ uri: 'switchboard://events/recent' })).rejects.toThrow(
      /internal error; reference/,
    );
  });
});
