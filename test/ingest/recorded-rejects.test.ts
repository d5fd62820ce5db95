/**
 * What an unauthenticated sender can make switchboard store: a rejected delivery is recorded (so it
 * can be inspected), but only its first bytes, and only so many per source address a minute. Runs
 * the composed server, as an operator starts it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventDetail, ListWebhookEventsOutput } from '../../generated/types.ts';
import { validateEventDetail } from '../../generated/validators.js';
import type { RunningSwitchboard } from '../../src/server/start-switchboard.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';

const TOKEN = 'recorded-rejects-token-0123456789';
const MIB = 1024 * 1024;

describe('recorded rejects', () => {
  let composed: ComposedServer;
  let running: RunningSwitchboard;

  beforeAll(async () => {
    composed = await startComposedServer({
      config: [
        'providers:',
        '  github: { preset: github, secret: the-real-secret }',
        '  small: { preset: github, secret: the-real-secret, record_rejected_max_bytes: 100 }',
        '  rotating: { preset: github, secret: the-real-secret }',
        'ingest: { record_rejected_per_minute: 3, record_rejected_per_provider_per_minute: 8 }',
        // Each test sends from its own (forwarded) address, so their budgets do not mix.
        'server: { trust_proxy: true }',
        '',
      ].join('\n'),
      envToken: TOKEN,
    });
    running = composed.running;
  });

  afterAll(() => composed?.close());

  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${running.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status, path).toBe(200);
    return (await res.json()) as T;
  };

  const junk = (route: string, body: Buffer, from: string): Promise<Response> =>
    fetch(`${running.url}${route}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'push',
        'x-hub-signature-256': `sha256=${'0'.repeat(64)}`,
        'x-forwarded-for': from,
      },
      body: new Uint8Array(body),
    });

  const rejectedFrom = async (provider: string): Promise<EventDetail[]> => {
    const list = await api<ListWebhookEventsOutput>(`/api/events?provider=${provider}&verified=false&limit=200`);
    return Promise.all(list.events.map((e) => api<EventDetail>(`/api/events/${e.id}`)));
  };

  it('keeps only the first 64 KiB of a rejected 5 MiB body, marked payload_truncated with its received_size', async () => {
    const body = Buffer.alloc(5 * MIB, 'a');
    body.write('{"forged":"', 0);
    const res = await junk('/hooks/github', body, '127.0.0.11');
    expect(res.status).toBe(401);
    const [detail, ...others] = await rejectedFrom('github');
    expect(others).toEqual([]);
    expect(detail).toMatchObject({ payload_size: 65536, payload_truncated: true, received_size: 5 * MIB });
    expect(validateEventDetail(detail)).toBe(true);
    const raw = await fetch(`${running.url}/api/events/${detail?.id ?? ''}/raw`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const stored = Buffer.from(await raw.arrayBuffer());
    expect(stored.equals(body.subarray(0, 65536))).toBe(true);
  });

  it('takes the limit per provider from record_rejected_max_bytes, and leaves a short body whole', async () => {
    expect((await junk('/hooks/small', Buffer.alloc(1000, 'b'), '127.0.0.12')).status).toBe(401);
    expect((await junk('/hooks/small', Buffer.from('{"short":true}'), '127.0.0.12')).status).toBe(401);
    const details = await rejectedFrom('small');
    expect(details.map((d) => [d.payload_size, d.payload_truncated, d.received_size])).toEqual([
      [14, undefined, undefined],
      [100, true, 1000],
    ]);
  });

  it('records at most record_rejected_per_minute rejects per source address: past it the sender still gets 401, nothing is stored and a metric counts it', async () => {
    const before = (await rejectedFrom('github')).length;
    const statuses: number[] = [];
    for (let i = 0; i < 5; i += 1)
      statuses.push((await junk('/hooks/github', Buffer.from(`{"n":${i}}`), '127.0.0.13')).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401]);
    expect((await rejectedFrom('github')).length).toBe(before + 3);
    // Another address has its own budget.
    expect((await junk('/hooks/github', Buffer.from('{"n":"other"}'), '127.0.0.14')).status).toBe(401);
    expect((await rejectedFrom('github')).length).toBe(before + 4);

    const metrics = await fetch(`${running.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const text = await metrics.text();
    expect(text).toContain('switchboard_rejected_not_recorded_total{provider="github"} 2');
    expect(text).toContain('switchboard_webhook_deliveries_total{provider="github",outcome="rejected"} 7');
  });

  it('keys the per-source budget by IPv4 address and IPv6 /64, and caps each provider whatever the sources (26.11)', async () => {
    const stored = async (): Promise<number> => (await rejectedFrom('rotating')).length;
    // Rotating through one /64 is one source: 3 stored, however the addresses are written.
    const sameNetwork = ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff::9', '2001:0db8:0001:0002:0:0:0:a'];
    for (const from of sameNetwork) expect((await junk('/hooks/rotating', Buffer.from('{}'), from)).status).toBe(401);
    expect(await stored()).toBe(3);
    // Another /64 is another source.
    expect((await junk('/hooks/rotating', Buffer.from('{}'), '2001:db8:1:3::1')).status).toBe(401);
    expect(await stored()).toBe(4);
    // Rotating IPv4 addresses: each is a source, but the provider stores at most 8 a minute.
    for (let n = 1; n <= 10; n += 1) {
      expect((await junk('/hooks/rotating', Buffer.from('{}'), `127.0.2.${n}`)).status).toBe(401);
    }
    expect(await stored()).toBe(8);
    const metrics = await fetch(`${running.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await metrics.text()).toContain('switchboard_rejected_not_recorded_total{provider="rotating"} 7');
  });
});
