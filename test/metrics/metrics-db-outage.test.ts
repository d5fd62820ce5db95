/**
 * /metrics behind managed tokens (no SWITCHBOARD_TOKEN) needs the database to check the bearer
 * token; while the database is away that check fails, and the answer must be 503 with
 * Retry-After like every other database-backed route, not a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSwitchboard } from '../../src/server/start-switchboard.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';
import { createEmptyDatabase } from '../support/database.ts';
import { startControlledProxy, type ControlledProxy } from '../support/tcp-proxy.ts';

describe('/metrics while the database is down', () => {
  let server: ComposedServer;
  let running: RunningSwitchboard;
  let proxy: ControlledProxy;
  let drop: () => Promise<void>;
  let token: string;

  beforeAll(async () => {
    const db = await createEmptyDatabase();
    drop = () => db.drop();
    const target = new URL(db.url);
    proxy = await startControlledProxy(target.hostname, Number(target.port || 5432));
    server = await startComposedServer({
      config: 'providers:\n  sandbox: { trust_mode: open }\n',
      envToken: undefined,
      database: { url: proxy.via(db.url) },
    });
    running = server.running;
    token = running.initialToken.token ?? '';
    expect(token).not.toBe('');
  });

  afterAll(async () => {
    // Back up first, so shutdown's own queries do not wait on a database that is not there.
    await proxy?.up();
    await server?.close();
    await proxy?.close();
    await drop?.();
  });

  it('answers 503 with Retry-After when the managed token cannot be looked up, and looks tokens up again once it is back', async () => {
    const scrape = (bearer: string): Promise<Response> =>
      fetch(`${running.url}/metrics`, { headers: { authorization: `Bearer ${bearer}` } });
    expect((await scrape(token)).status).toBe(200);

    await proxy.down();
    // A token the server has not seen yet: a cached one would be served without asking the database.
    const res = await scrape(`${token}-unseen`);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await res.json()).toEqual({
      error: { code: 'unavailable', message: 'database unavailable; try again shortly' },
    });

    await proxy.up();
    // The same unseen token once the database answers again: looked up, found wanting.
    let after = await scrape(`${token}-unseen`);
    for (let attempt = 0; after.status === 503 && attempt < 20; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = await scrape(`${token}-unseen`);
    }
    expect(after.status).toBe(401);
  });
});
