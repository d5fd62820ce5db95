/**
 * Issue 37.5: "is a handshake" is ingest's fact, stored when it answered the delivery, not worked
 * out again from the config in force when someone asks. A Zoom endpoint.url_validation is answered
 * and stored by a server that has the secret; the same database is then served with the secret
 * removed, and with the preset replaced by open: the replay-headers answer still says handshake,
 * and `switchboard listen` (spawned, as a developer runs it) skips it while it forwards the event
 * beside it. A row stored before the fact was recorded is told by what ingest recorded then.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SwitchboardConfig } from '../../generated/types.ts';
import type { ApiReplayHeaders } from '../../generated/types.ts';
import { eventually } from '../forward/forward-kit.ts';
import { startMcpHarness, type Harness } from '../mcp/support/switchboard-harness.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { startConsumer } from '../support/local-server.ts';
import { spawnListen } from '../support/spawn-listen.ts';

const ZOOM_SECRET = 'zoom-secret-stored-handshake';
const OPEN = { trust_mode: 'open', event_type_from: '/type' } as const;

let db: TestDatabase;
const since = new Date(Date.now() - 1000).toISOString();
let handshakeId = '';
let ordinaryId = '';

function serve(zoom: NonNullable<SwitchboardConfig['providers']>[string]): Promise<Harness> {
  return startMcpHarness({ db, config: { providers: { zoom, open: OPEN } } });
}

async function replayHeaders(h: Harness, id: string): Promise<ApiReplayHeaders> {
  const res = await fetch(new URL(`/api/events/${id}/replay-headers`, h.origin), {
    headers: { authorization: `Bearer ${h.token}` },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as ApiReplayHeaders;
}

beforeAll(async () => {
  db = await freshDatabase({ maximumPoolSize: 10 });
  const withSecret = await serve({ preset: 'zoom', secret: ZOOM_SECRET });
  try {
    const plainToken = `qgg8vlvZRS6UYooatFL8Aw-${randomUUID()}`;
    const body = JSON.stringify({ payload: { plainToken }, event_ts: Date.now(), event: 'endpoint.url_validation' });
    const ts = String(Math.floor(Date.now() / 1000));
    const signature = createHmac('sha256', ZOOM_SECRET).update(`v0:${ts}:${body}`).digest('hex');
    const answered = await fetch(new URL('/hooks/zoom', withSecret.origin), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-zm-request-timestamp': ts,
        'x-zm-signature': `v0=${signature}`,
      },
      body,
    });
    expect(answered.status).toBe(200);
    expect(((await answered.json()) as { plainToken: string }).plainToken).toBe(plainToken);
    const [stored] = (await withSecret.store.list({ provider: 'zoom' })).events;
    expect(stored?.event_type).toBe('endpoint.url_validation');
    handshakeId = stored?.id ?? '';
    expect((await replayHeaders(withSecret, handshakeId)).handshake).toBe(true);
    const ordinary = await fetch(new URL('/hooks/open', withSecret.origin), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'order.created' }),
    });
    ordinaryId = ((await ordinary.json()) as { id: string }).id;
  } finally {
    await withSecret.close();
  }
});

afterAll(() => db?.close());

describe('a stored handshake after the config changed (issue 37.5)', () => {
  it('replay-headers still says handshake with the Zoom secret removed, and with the preset replaced by open', async () => {
    for (const zoom of [{ preset: 'zoom' }, OPEN] as const) {
      const h = await serve(zoom);
      try {
        expect((await replayHeaders(h, handshakeId)).handshake, JSON.stringify(zoom)).toBe(true);
        expect((await replayHeaders(h, ordinaryId)).handshake).toBe(false);
      } finally {
        await h.close();
      }
    }
  });

  it('switchboard listen skips the stored url_validation once the Zoom secret is removed, and forwards the event beside it', async () => {
    const h = await serve({ preset: 'zoom' });
    const local = await startConsumer();
    const state = await mkdtemp(join(tmpdir(), 'sb-stored-handshake-'));
    const child = spawnListen([h.origin, '--forward-to', local.url(), '--since', since], {
      SWITCHBOARD_TOKEN: h.token,
      XDG_STATE_HOME: state,
    });
    try {
      await eventually(() => local.requests.length >= 1, 'the ordinary event forwarded');
      await child.waitFor(/skipped: it is a registration handshake/);
      expect(local.requests.map((r) => r.headers['x-switchboard-replay'])).toEqual([ordinaryId]);
    } finally {
      await child.stop('SIGKILL');
      await local.close();
      await rm(state, { recursive: true, force: true });
      await h.close();
    }
  }, 60_000);

  it('a row stored before the fact was recorded is told by what ingest recorded then, not by the config', async () => {
    await db.pool.query(sql.unsafe`UPDATE events SET handshake = NULL`);
    const h = await serve({ preset: 'zoom' });
    try {
      expect((await replayHeaders(h, handshakeId)).handshake).toBe(true);
      expect((await replayHeaders(h, ordinaryId)).handshake).toBe(false);
    } finally {
      await h.close();
    }
  });
});
