/**
 * The production defaults against slow clients, on a real child process: 200 slowloris sockets
 * trickling header lines and 50 trickling bodies do not make switchboard slow for anyone else,
 * and the slow heads are cut once the 10 s headersTimeout passes (enforced within about a second:
 * start-switchboard.ts checks every second, where Node's default is every 30 s).
 * test/fuzz/slow-clients.test.ts covers the same mechanisms with shortened timeouts, plus the
 * MCP session cap.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { SERVER_TIMEOUTS } from '../../src/http/http-server.ts';
import { dripUntilClosed, openRaw } from '../support/raw-socket.ts';
import { postJson } from '../support/wire.ts';
import { reliabilitySuite } from './support/suite.ts';

const suite = reliabilitySuite({
  child: { config: { providers: { open: { trust_mode: 'open' } } }, logLevel: 'warn' },
});

describe('slow clients against the production timeouts', () => {
  it('stays responsive under 250 slow sockets and cuts the slow heads after headersTimeout', async () => {
    const { child } = suite;
    const heads = await Promise.all(Array.from({ length: 200 }, () => openRaw(child.port)));
    const bodies = await Promise.all(Array.from({ length: 50 }, () => openRaw(child.port)));
    const started = performance.now();
    const headsClosed = heads.map((s) => {
      s.socket.write('POST /hooks/open HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      return dripUntilClosed(s, 'X-Slow: a\r\n', 500);
    });
    for (const s of bodies) {
      s.socket.write(
        'POST /hooks/open HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
      );
      void dripUntilClosed(s, ' ', 500);
    }

    // While they hold their sockets, everyone else is served promptly.
    const latencies: number[] = [];
    while (performance.now() - started < SERVER_TIMEOUTS.headersTimeoutMs - 1_000) {
      const t = performance.now();
      const health = await fetch(`${child.url}/healthz`);
      expect(health.status).toBe(200);
      const delivery = await postJson(`${child.url}/hooks/open`, '{"ok":1}');
      expect(delivery.status).toBe(200);
      latencies.push(performance.now() - t);
      await delay(500);
    }
    expect(
      Math.max(...latencies),
      `health + delivery latencies: ${latencies.map(Math.round).join(', ')} ms`,
    ).toBeLessThan(2_000);

    const closed = await Promise.all(headsClosed);
    const latest = Math.max(...closed) - started;
    expect(latest).toBeGreaterThanOrEqual(SERVER_TIMEOUTS.headersTimeoutMs - 500);
    expect(latest, 'slow heads cut within the headers timeout plus the check interval (and slack)').toBeLessThan(
      SERVER_TIMEOUTS.headersTimeoutMs + SERVER_TIMEOUTS.checkIntervalMs + 3_000,
    );
    // The trickled bodies are within requestTimeout (60 s) still; the test ends them itself.
    for (const s of bodies) s.destroy();
    expect(child.isRunning()).toBe(true);
    console.info(
      `slow clients: 200 slow heads cut after ${Math.round(latest)} ms; meanwhile health + delivery took p50 ` +
        `${Math.round([...latencies].sort((a, b) => a - b)[Math.floor(latencies.length / 2)] ?? 0)} ms, max ${Math.round(Math.max(...latencies))} ms`,
    );
  });
});
