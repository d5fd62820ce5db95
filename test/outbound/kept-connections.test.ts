/**
 * Forwarding keeps one pinned connection pool per rule open between deliveries. These tests show,
 * on loopback, that reuse never skips the target check: a name is resolved again on every
 * delivery (or, when the resolver gives a TTL, once the TTL ran out), a name that now answers
 * another (allowed) address gets a new connection pinned to that address, and a name that now
 * answers a refused address is refused before any socket is used. The verdict kept between
 * deliveries is dropped when switchboard's own addresses change or a send fails. Non-loopback
 * answers come only from an injected resolver and are never connected to.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createOutbound, type DeliverRequest } from '../../src/outbound/deliver-event.ts';
import type { ConnectAttempt } from '../../src/outbound/target-policy/guarded-dispatcher.ts';
import type { StoredEvent } from '../../src/store/events/event-store.ts';
import { silentLogger } from '../support/database.ts';
import { newEvent } from '../support/events.ts';
import { listenLocal } from '../support/local-server.ts';
import type { Resolver } from '../../src/outbound/target-policy/resolve-target.ts';
import type { SelfAddress } from '../../src/outbound/target-policy/self-loop.ts';
import { expectRefused, scriptedResolver, startServer, type TestServer } from './target-policy/test-helpers.ts';

const servers: Pick<TestServer, 'close'>[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

function storedEvent(): StoredEvent {
  const {
    passedCheck: _passed,
    receivedSize: _size,
    summary: _summary,
    request: _request,
    handshake: _handshake,
    ...event
  } = newEvent();
  return {
    ...event,
    id: crypto.randomUUID(),
    passedCheck: true,
    payloadSize: event.payload.length,
    receivedSize: null,
    receivedAt: new Date().toISOString(),
    summary: null,
    request: null,
    handshake: false,
  };
}

function outboundWith(
  resolver: Resolver,
  extra: { now?: () => number; selfAddresses?: () => readonly SelfAddress[] } = {},
) {
  const connects: ConnectAttempt[] = [];
  const noSelf: readonly SelfAddress[] = [];
  const outbound = createOutbound({
    providers: [],
    allow: [],
    selfAddresses: extra.selfAddresses ?? (() => noSelf),
    logger: silentLogger,
    resolver,
    onConnect: (attempt) => connects.push(attempt),
    ...(extra.now === undefined ? {} : { now: extra.now }),
  });
  return { outbound, connects };
}

/**
 * A consumer on 127.0.0.1 and the same port on 127.0.0.2: the "elsewhere" a name moves to, with
 * its requests and connections counted.
 */
async function twoAddresses(): Promise<{ first: TestServer; second: { connections: number; requests: number } }> {
  const first = await startServer('127.0.0.1');
  servers.push(first);
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
  return { first, second };
}

/** A loopback consumer and an outbound sending to it; the outbound is closed when `run` ends. */
async function withConsumer(
  resolver: Resolver,
  extra: Parameters<typeof outboundWith>[1],
  run: (consumer: TestServer, outbound: ReturnType<typeof outboundWith>['outbound']) => Promise<void>,
): Promise<void> {
  const consumer = await startServer('127.0.0.1');
  servers.push(consumer);
  const { outbound } = outboundWith(resolver, extra);
  try {
    await run(consumer, outbound);
  } finally {
    await outbound.close();
  }
}

/** Like scriptedResolver, with a TTL (seconds) on every answer, as a DNS resolver reports it. */
function resolverWithTtl(ttl: number, ...answers: (readonly string[])[]): { resolver: Resolver; calls: string[] } {
  const scripted = scriptedResolver(...answers);
  return {
    calls: scripted.calls,
    resolver: async (hostname) => (await scripted.resolver(hostname)).map((answer) => ({ ...answer, ttl })),
  };
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
    const { first, second } = await twoAddresses();
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

  it("keeps a name's verdict for its answer's TTL, then resolves again and checks a changed answer afresh", async () => {
    const { first, second } = await twoAddresses();
    const resolver = resolverWithTtl(30, ['127.0.0.1'], ['127.0.0.1'], ['127.0.0.2'], ['169.254.169.254']);
    let clock = Date.now();
    const { outbound, connects } = outboundWith(resolver.resolver, { now: () => clock });
    try {
      const url = `http://consumer.test:${first.port}/hooks-in`;
      for (let i = 0; i < 3; i += 1) {
        expect(await outbound.deliver(request(url, 'forward:a'))).toMatchObject({ ok: true, status: 200 });
      }
      // Within the TTL: one lookup for three deliveries.
      expect(resolver.calls).toHaveLength(1);
      clock += 31_000;
      // The TTL ran out: asked again, the same answer keeps the verdict and the connection.
      await outbound.deliver(request(url, 'forward:a'));
      expect(resolver.calls).toHaveLength(2);
      expect(first.requests).toHaveLength(4);
      const before = connects.length;
      clock += 31_000;
      // A changed answer is checked afresh and gets a connection pinned to the new address.
      await outbound.deliver(request(url, 'forward:a'));
      expect(resolver.calls).toHaveLength(3);
      expect(second.requests).toBe(1);
      expect(connects.slice(before).map((c) => c.address)).toEqual(['127.0.0.2']);
      clock += 31_000;
      // A refused answer is refused before any socket is used.
      await expectRefused(outbound.deliver(request(url, 'forward:a')), /169\.254\.169\.254/);
      expect(resolver.calls).toHaveLength(4);
      expect(connects).toHaveLength(before + 1);
      expect(second.requests).toBe(1);
    } finally {
      await outbound.close();
    }
  });

  it("checks an IP literal once, and again when switchboard's own addresses change", async () => {
    let self: readonly SelfAddress[] = [];
    const resolver = scriptedResolver(['127.0.0.1']);
    await withConsumer(resolver.resolver, { selfAddresses: () => self }, async (consumer, outbound) => {
      const url = `http://127.0.0.1:${consumer.port}/hooks/github`;
      expect(await outbound.deliver(request(url, 'forward:a'))).toMatchObject({ ok: true, status: 200 });
      expect(await outbound.deliver(request(url, 'forward:a'))).toMatchObject({ ok: true, status: 200 });
      expect(resolver.calls).toHaveLength(0);
      // switchboard now listens there: the same target would loop back into its own webhook route.
      self = [{ host: '127.0.0.1', port: consumer.port }];
      await expectRefused(outbound.deliver(request(url, 'forward:a')), /loop back into switchboard/);
      expect(consumer.requests).toHaveLength(2);
    });
  });

  it('drops the verdict when a send fails, so the next delivery resolves again within the TTL', async () => {
    const resolver = resolverWithTtl(300, ['127.0.0.1']);
    await withConsumer(resolver.resolver, {}, async (consumer, outbound) => {
      const url = `http://consumer.test:${consumer.port}/hooks-in`;
      expect(await outbound.deliver(request(url, 'forward:a'))).toMatchObject({ ok: true, status: 200 });
      await consumer.close();
      const failedSend = await outbound.deliver(request(url, 'forward:a'));
      expect(failedSend.ok).toBe(false);
      expect(resolver.calls).toHaveLength(1);
      await outbound.deliver(request(url, 'forward:a'));
      expect(resolver.calls).toHaveLength(2);
    });
  });
});
