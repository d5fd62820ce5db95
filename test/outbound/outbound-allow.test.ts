/**
 * outbound.allow: one list for where replay and forwarding may send, read from the config, with
 * replay.allow as its old name (read still, with a warning at start-up; both set is a config
 * error). On the wire, the only address listed is 0.0.0.0: not loopback, so refused by default,
 * yet a connection to it stays on this machine (Linux delivers it to the loopback listener).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.ts';
import { parseConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startComposedServer } from '../support/composed-server.ts';
import { startConsumer, type Consumer } from '../support/local-server.ts';
import { postJson } from '../support/wire.ts';
import { eventually } from '../forward/forward-kit.ts';

const TOKEN = 'outbound-allow-token-0123456789abcdef';

describe('outbound.allow in the config', () => {
  it('is read as the list replay and forwarding share, empty by default', () => {
    expect(parseConfig('outbound: { allow: [hooks.internal, 10.1.0.0/16] }', {}).outbound).toEqual({
      allow: ['hooks.internal', '10.1.0.0/16'],
      allowFrom: 'outbound.allow',
    });
    expect(parseConfig('', {}).outbound).toEqual({ allow: [], allowFrom: 'outbound.allow' });
  });

  it('takes replay.allow as its old name, and says so', () => {
    expect(parseConfig('replay: { allow: [hooks.internal] }', {}).outbound).toEqual({
      allow: ['hooks.internal'],
      allowFrom: 'replay.allow',
    });
  });

  it.each([
    'outbound: { allow: [a.internal] }\nreplay: { allow: [b.internal] }',
    'outbound: { allow: [] }\nreplay: { allow: [b.internal] }',
  ])('refuses both keys set, naming them: %j', (text) => {
    expect(() => parseConfig(text, {})).toThrow(ConfigError);
    expect(() => parseConfig(text, {})).toThrow(
      'replay.allow: the old name of outbound.allow; set outbound.allow only, not both',
    );
  });
});

interface Started {
  consumer: Consumer;
  logs: string[];
  url: string;
  close(): Promise<void>;
}

/** A server whose one forward rule, and one replay, go to 0.0.0.0 (this machine), allowed by `allowYaml`. */
async function startWithAllow(allowYaml: string): Promise<Started> {
  const consumer = await startConsumer();
  const logs: string[] = [];
  const config = [
    'providers:',
    '  sandbox: { trust_mode: open, event_type_from: /type }',
    allowYaml,
    'forward:',
    `  app: { to: "http://0.0.0.0:${consumer.port}/forwarded" }`,
    '',
  ].join('\n');
  const server = await startComposedServer({
    config,
    envToken: TOKEN,
    database: 'empty',
    logger: createLogger({ level: 'warn', destination: { write: (line: string) => void logs.push(line) } }),
  });
  return {
    consumer,
    logs,
    url: server.url,
    close: async () => {
      await server.close();
      await consumer.close();
    },
  };
}

/** Stores one event, waits for its forward, then replays it: both to 0.0.0.0. */
async function forwardAndReplay(server: Started): Promise<void> {
  const stored = await postJson(`${server.url}/hooks/sandbox`, '{"type":"ping"}');
  expect(stored.status).toBe(200);
  const { id } = (await stored.json()) as { id: string };
  await eventually(() => server.consumer.requests.some((r) => r.url === '/forwarded'), 'the forwarded event');
  const replayed = await fetch(`${server.url}/api/events/${id}/replay`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ target_url: `http://0.0.0.0:${server.consumer.port}/replayed` }),
  });
  expect(replayed.status, await replayed.clone().text()).toBe(200);
  expect(await replayed.json()).toMatchObject({ delivered: true, response_status: 200 });
  expect(server.consumer.requests.map((r) => r.url).sort()).toEqual(['/forwarded', '/replayed']);
}

describe('outbound.allow on the wire', () => {
  let current: Started | undefined;
  afterAll(async () => {
    await current?.close();
  });

  it('governs forwarding and replay alike, with no warning', async () => {
    current = await startWithAllow('outbound: { allow: ["0.0.0.0"] }');
    await forwardAndReplay(current);
    expect(current.logs.join('')).not.toContain('replay.allow');
    await current.close();
    current = undefined;
  });

  it('does the same under its old name, replay.allow, and warns once at start-up', async () => {
    current = await startWithAllow('replay: { allow: ["0.0.0.0"] }');
    await forwardAndReplay(current);
    const warnings = current.logs.filter((line) => line.includes('replay.allow is the old name of outbound.allow'));
    expect(warnings).toHaveLength(1);
    await current.close();
    current = undefined;
  });
});
