/**
 * The saturation signal the group committer gives the search indexer (src/store/events/ingest-pressure.ts),
 * on a clock the test moves; and the group committer reporting each flush's size as it starts.
 */
import { describe, expect, it } from 'vitest';
import { createGroupCommitter } from '../../src/store/events/group-commit.ts';
import { createIngestPressure } from '../../src/store/events/ingest-pressure.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, silentLogger } from '../support/database.ts';
import { newEvent } from '../support/events.ts';

describe('ingest pressure', () => {
  it('is pressed while recent flushes carry many events on average, and not once they stop or shrink', () => {
    let now = 0;
    const pressure = createIngestPressure({ minBatch: 16, windowMs: 500, now: () => now });
    /** `count` flushes of `events` each, `everyMs` apart on the test's clock. */
    const flushes = (count: number, everyMs: number, events: number): void => {
      for (let i = 0; i < count; i += 1) {
        now += everyMs;
        pressure.flushed(events);
      }
    };
    expect(pressure.pressed()).toBe(false);
    // Light load: one event a flush.
    flushes(20, 1, 1);
    expect(pressure.pressed()).toBe(false);
    // Saturated: events pile up behind the flushes in flight.
    flushes(10, 20, 40);
    expect(pressure.pressed()).toBe(true);
    // One small flush does not end a burst; a run of them does.
    flushes(1, 1, 2);
    expect(pressure.pressed()).toBe(true);
    flushes(10, 1, 2);
    expect(pressure.pressed()).toBe(false);
    // A burst that stopped says nothing about now.
    flushes(10, 0, 100);
    expect(pressure.pressed()).toBe(true);
    now += 501;
    expect(pressure.pressed()).toBe(false);
    // After a silence, the first flush starts the average afresh.
    pressure.flushed(3);
    expect(pressure.pressed()).toBe(false);
  });

  it('hears of each flush from the group committer, with the events it carries', async () => {
    const db = await freshDatabase();
    try {
      const sizes: number[] = [];
      const committer = createGroupCommitter({
        store: createEventStore(db.pool),
        logger: silentLogger,
        maxConcurrentFlushes: 1,
        onFlush: (events) => sizes.push(events),
      });
      const first = committer.submit(newEvent());
      await new Promise((resolve) => setImmediate(resolve));
      // The one flush allowed is in flight: these wait for it and go out together.
      const rest = Array.from({ length: 5 }, () => committer.submit(newEvent()));
      await Promise.all([first, ...rest]);
      expect(sizes).toEqual([1, 5]);
    } finally {
      await db.close();
    }
  });
});
