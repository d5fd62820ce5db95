import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSwitchboard } from '../../src/server/start-switchboard.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';

const TOKEN = 'metrics-test-token-0123456789';
const SECRET = 'metrics-secret';

describe('metrics wiring of the composed server', () => {
  let composed: ComposedServer;
  let running: RunningSwitchboard;

  beforeAll(async () => {
    composed = await startComposedServer({
      config: `providers:\n  github: { preset: github, secret: ${SECRET} }\n  sandbox: { trust_mode: open }\n`,
      envToken: TOKEN,
    });
    running = composed.running;
  });

  afterAll(() => composed?.close());

  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${running.url}${path}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers },
    });

  it('requires the bearer token on /metrics by default', async () => {
    const res = await fetch(`${running.url}/metrics`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('counts deliveries by outcome, verification failures by reason and latency', async () => {
    const body = JSON.stringify({ action: 'opened', n: 1 });
    const headers = { 'x-github-event': 'issues', 'x-github-delivery': crypto.randomUUID() };
    expect(
      (await post('/hooks/github', body, { ...headers, 'x-hub-signature-256': await sign(SECRET, body) })).status,
    ).toBe(200);
    expect(
      (await post('/hooks/github', body, { ...headers, 'x-hub-signature-256': await sign(SECRET, body) })).status,
    ).toBe(200);
    expect(
      (
        await post('/hooks/github', body, {
          ...headers,
          'x-github-delivery': 'x',
          'x-hub-signature-256': await sign('wrong', body),
        })
      ).status,
    ).toBe(401);
    expect((await post('/hooks/sandbox', body)).status).toBe(200);
    expect((await post('/hooks/nobody', body)).status).toBe(404);

    const res = await fetch(`${running.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(text).toContain('switchboard_webhook_deliveries_total{provider="github",outcome="stored"} 1');
    expect(text).toContain('switchboard_webhook_deliveries_total{provider="github",outcome="duplicate"} 1');
    expect(text).toContain('switchboard_webhook_deliveries_total{provider="github",outcome="rejected"} 1');
    expect(text).toContain('switchboard_webhook_deliveries_total{provider="sandbox",outcome="stored"} 1');
    expect(text).toContain('switchboard_webhook_deliveries_total{provider="unknown",outcome="not_found"} 1');
    expect(text).toContain('switchboard_verification_failures_total{provider="github",reason="bad_signature"} 1');
    expect(text).toMatch(/switchboard_ingest_duration_seconds_count\{provider="github"\} 3/);
    expect(text).toMatch(/switchboard_db_pool_connections\{state="idle"\} \d+/);
    expect(text).toContain('switchboard_mcp_sessions 0');
    expect(text).not.toContain(SECRET);
  });
});
