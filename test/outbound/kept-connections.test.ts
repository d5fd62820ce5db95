/**
 * Forwarding keeps one pinned connection pool per rule open between deliveries. These tests show,
 * on loopback, that reuse never skips the target check: every delivery resolves and checks the
 * target again, a name that now answers another (allowed) address gets a new connection pinned to
 * that address, and a name that now answers a refused address is refused before any socket is
 * used. Non-loopback answers come only from an injected resolver and are never connected to.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createOutbound, type DeliverRequest } from '../../src/outbound/deliver-event.ts';
import type { ConnectAttempt } from '../../src/outbound/target-policy/guarded-dispatcher.ts';
import type { StoredEvent } from '../../src/store/event-store.ts';
import { silentLogger } from '../support/database.ts';
import { newEvent } from '../support/events.ts';
import { listenLocal } from '../support/local-server.ts';
import { expectRefused, scriptedResolver, startServer, type TestServer } from './target-policy/test-helpers.ts';

const servers: Pick<TestServer, 'close'>[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

function storedEvent(): StoredEvent {
  const { passedCheck: _passed, receivedSize: _size, summary: _summary, request: _request, ...event } = newEvent();
  return {
    ...event,
    id: crypto.randomUUID(),
    passedCheck: true,
    payloadSize: event.payload.length,
    receivedSize: null,
    receivedAt: new Date().toISOString(),
    summary: null,
    request: null,
  };
}

function outboundWith(resolver: ReturnType<typeof scriptedResolver>['resolver']) {
  const connects: ConnectAttempt[] = [];
  const outbound = createOutbound({
    providers: [],
    allow: [],
    selfAddresses: () => [],
    logger: silentLogger,
    resolver,
    onConnect: (attempt) => connects.push(attempt),
  });
  return { outbound, connects };
}

const request = (url: string, keepAliveKey?: string): DeliverRequest => ({
  event: storedEvent(),
  url: new URL(url),
  timeoutMs: 5_000,
  unsigned: true,
  ...(keepAliveKey === undefined ? {} : { keepAliveKey }),
});

describe('kept-alive forwarding connections', () => {
  it('reuses one connection per key, and opens one per delivery without a key', async () => {
    const consumer = await startServer('127.0.0.1');
    servers.push(consumer);
    const { outbound, connects } = outboundWith(scriptedResolver(['127.0.0.1']).resolver);
    try {
      const url = `http://127.0.0.1:${consumer.port}/hooks-in`;
      for (let i = 0; i < 6; i += 1)
        expect(await outbound.deliver(request(url, 'forward:a'))).toMatchObject({ ok: true, status: 200 });
      expect(consumer.requests).toHaveLength(6);
      // undici may open a second socket while the first is still being handed back; never one each.
      const kept = consumer.connections;
      expect(kept).toBeLessThanOrEqual(2);
      expect(connects).toHaveLength(kept);
      for (let i = 0; i < 3; i += 1)
        expect(await outbound.deliver(request(url))).toMatchObject({ ok: true, status: 200 });
      expect(consumer.connections).toBe(kept + 3);
      expect(connects).toHaveLength(kept + 3);
    } finally {
      await outbound.close();
    }
  });

  it('checks the target on every delivery: a name now pointing elsewhere gets a new pinned connection, or a refusal', async () => {
    const first = await startServer('127.0.0.1');
    servers.push(first);
    // The same port on a second loopback address: the "elsewhere" the name moves to.
    const second = { connections: 0, requests: 0 };
    const listening = await listenLocal(
      (_req, res) => {
        second.requests += 1;
        res.end('ok');
      },
      '127.0.0.2',
      first.port,
    );
    listening.server.on('connection', () => {
      second.connections += 1;
    });
    servers.push(listening);
    const resolver = scriptedResolver(
      ['127.0.0.1'],
      ['127.0.0.1'],
      ['127.0.0.2'],
      // A rebinding answer the policy refuses; it is never connected to.
      ['169.254.169.254'],
    );
    const { outbound, connects } = outboundWith(resolver.resolver);
    try {
      const url = `http://consumer.test:${first.port}/hooks-in`;
      await outbound.deliver(request(url, 'forward:a'));
      await outbound.deliver(request(url, 'forward:a'));
      expect(resolver.calls).toHaveLength(2);
      expect(first.requests).toHaveLength(2);
      expect(new Set(connects.map((c) => c.address))).toEqual(new Set(['127.0.0.1']));
      const before = connects.length;
      // The name now answers another loopback address: the kept connection to the old one is not used.
      await outbound.deliver(request(url, 'forward:a'));
      expect(first.requests).toHaveLength(2);
      expect(second.requests).toBe(1);
      expect(second.connections).toBe(1);
      expect(connects.slice(before).map((c) => c.address)).toEqual(['127.0.0.2']);
      // The name now answers a refused address: refused before any socket, kept ones included.
      await expectRefused(outbound.deliver(request(url, 'forward:a')), /169\.254\.169\.254/);
      expect(resolver.calls).toHaveLength(4);
      expect(first.requests).toHaveLength(2);
      expect(second.requests).toBe(1);
      expect(connects).toHaveLength(before + 1);
    } finally {
      await outbound.close();
    }
  });
});
