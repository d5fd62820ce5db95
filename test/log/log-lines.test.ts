/**
 * No log line has a key twice. pino writes its own keys (level, time, pid, hostname, name, msg)
 * on every line and does not merge a logged object into them, so a `{ name }` field made
 * `"name":"switchboard",…,"name":"events"`, which most parsers read as the last one only.
 */
import { chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { spawnSwitchboard } from '../support/spawn-switchboard.ts';
import { DuplicateKeyError, parseStrictJson } from '../support/strict-json.ts';
import { tempDir } from '../cli/support/cli-process.ts';

/** Every JSON line of a process's output, each parsed refusing a key twice. */
function strictLines(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => {
      try {
        return parseStrictJson(line) as Record<string, unknown>;
      } catch (err) {
        throw new Error(`${(err as Error).message}: ${line}`);
      }
    });
}

describe('log lines', () => {
  it('are read by a parser that refuses a key twice, at any depth', () => {
    expect(() => parseStrictJson('{"name":"switchboard","v":1,"name":"events"}')).toThrow(DuplicateKeyError);
    expect(() => parseStrictJson('{"a":[{"b":1},{"c":{"d":"}\\"","d":2}}]}')).toThrow(
      /"d" appears twice in \$\.a\[1\]\.c/,
    );
    expect(parseStrictJson('{"a":[{"b":1},{"b":"x\\"}"}],"c":{"a":null},"d":-1.5e3,"e":true}')).toEqual({
      a: [{ b: 1 }, { b: 'x"}' }],
      c: { a: null },
      d: -1500,
      e: true,
    });
  });

  it('have each key once through a start-up on the embedded PostgreSQL, requests and a shutdown', async () => {
    const parent = await tempDir('sb-log-lines-');
    // Reachable for the postgres user as root, so the cluster stays here (and goes with the test).
    await chmod(parent, 0o755);
    const server = await spawnSwitchboard({
      config: 'providers:\n  sandbox: { trust_mode: open }\n  github: { preset: github, secret: dev }\n',
      databaseUrl: null,
      dataDir: join(parent, 'data'),
      logLevel: 'debug',
    });
    try {
      const headers = { authorization: `Bearer ${server.token ?? ''}` };
      expect((await fetch(`${server.url}/hooks/sandbox`, { method: 'POST', body: '{"a":1}' })).status).toBe(200);
      const forged = {
        'x-github-event': 'push',
        'x-github-delivery': 'c0ffee00-0000-4000-8000-000000000000',
        'x-hub-signature-256': `sha256=${'0'.repeat(64)}`,
      };
      expect((await fetch(`${server.url}/hooks/github`, { method: 'POST', headers: forged, body: '{}' })).status).toBe(
        401,
      );
      expect((await fetch(`${server.url}/api/events`, { headers })).status).toBe(200);
      expect((await fetch(`${server.url}/api/events/not-an-id`, { headers })).status).toBe(400);
    } finally {
      expect((await server.stop()).code).toBe(0);
    }
    const lines = strictLines(server.output());
    const messages = lines.map((line) => line.msg);
    // The lines that had a key twice, among many others.
    expect(messages).toEqual(
      expect.arrayContaining(['embedded PostgreSQL started', 'applied migration', 'embedded PostgreSQL stopped']),
    );
    expect(lines.length).toBeGreaterThan(20);
    for (const line of lines) expect(line.name).toBe('switchboard');
    expect(lines.find((line) => line.msg === 'applied migration')).toMatchObject({ version: 1, migration: 'events' });
  }, 180_000);

  it("move a logged field named like one of the line's own keys aside, keeping the line's", () => {
    let written = '';
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        written += chunk.toString('utf8');
        done();
      },
    });
    const logger = createLogger({ level: 'info', destination });
    logger.info({ name: 'events', pid: 1, hostname: 'h', time: 0, level: 'x', msg: 'inner' }, 'outer');
    logger.info({ msg: 'the message itself' });
    logger.child({ component: 'c' }).warn({ name: 'child' }, 'from a child');
    const [first, second, third] = strictLines(written);
    expect(first).toMatchObject({
      name: 'switchboard',
      msg: 'outer',
      level: 30,
      name_field: 'events',
      pid_field: 1,
      hostname_field: 'h',
      time_field: 0,
      level_field: 'x',
      msg_field: 'inner',
    });
    expect(first?.pid).toBe(process.pid);
    expect(second).toMatchObject({ msg: 'the message itself' });
    expect(second).not.toHaveProperty('msg_field');
    expect(third).toMatchObject({ name: 'switchboard', component: 'c', name_field: 'child', msg: 'from a child' });
  });
});
