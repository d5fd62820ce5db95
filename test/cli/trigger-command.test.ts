/**
 * `switchboard trigger` posts where `serve` listens with the same config and environment, says
 * where that was, and names the variable a provider's missing secret should have come from.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { createEmptyDatabase } from '../support/database.ts';
import { closedPort } from '../support/local-server.ts';
import { spawnSwitchboard } from '../support/spawn-switchboard.ts';
import { capture, childEnv, cliOutcome, tempDir } from './support/cli-process.ts';

const PROVIDERS = 'providers:\n  github: { preset: github, secret: "${SB_TEST_GH_SECRET}" }\n';

describe('switchboard trigger', () => {
  it('posts to the port of server.port or PORT, as serve listens, and says which', async () => {
    const db = await createEmptyDatabase();
    const dir = await tempDir('sb-trigger-port-');
    const port = await closedPort();
    const withPort = join(dir, 'with-port.yaml');
    await writeFile(withPort, `${PROVIDERS}server: { port: ${port} }\n`);
    const without = join(dir, 'without-port.yaml');
    await writeFile(without, PROVIDERS);
    const secret = { SB_TEST_GH_SECRET: 'dev' };
    // serve reads the same file: with no --port, PORT or server.port it would be on 8080.
    const server = await spawnSwitchboard({
      config: `${PROVIDERS}server: { port: ${port} }\n`,
      databaseUrl: db.url,
      port,
      env: secret,
    });
    try {
      const fromConfig = await cliOutcome(['trigger', 'github', 'push', '--config', withPort], childEnv(secret));
      expect(fromConfig.stderr).toBe('');
      expect(fromConfig.stdout).toMatch(
        new RegExp(
          `^push → http://127\\.0\\.0\\.1:${port}/hooks/github \\(port from server\\.port in ${withPort.replaceAll('.', '\\.')}\\): 200 \\{"id":"[0-9a-f-]{36}","duplicate":false\\}\\n$`,
        ),
      );
      expect(fromConfig.code).toBe(0);

      const fromEnv = await cliOutcome(
        ['trigger', 'github', 'issues', '--config', without],
        childEnv({ ...secret, PORT: String(port) }),
      );
      expect(fromEnv.stdout).toMatch(
        new RegExp(`^issues → http://127\\.0\\.0\\.1:${port}/hooks/github \\(port from PORT\\): 200 `),
      );
      expect(fromEnv.code).toBe(0);

      const events = await fetch(`${server.url}/api/events?provider=github`, {
        headers: { authorization: `Bearer ${server.token ?? ''}` },
      });
      const body = (await events.json()) as { events: { event_type: string; verified: boolean }[] };
      expect(body.events.map((e) => [e.event_type, e.verified])).toEqual([
        ['issues.opened', true],
        ['push', true],
      ]);
    } finally {
      await server.stop();
      server.cleanup();
      await db.drop();
    }
  }, 120_000);

  it('says where it tried, and where that port came from, when nothing answers', async () => {
    const dir = await tempDir('sb-trigger-port-');
    const file = join(dir, 'sb.yaml');
    const port = await closedPort();
    await writeFile(file, 'providers:\n  sandbox: { trust_mode: open }\n');
    const c = capture();
    const env = { PORT: String(port) };
    expect(await main(['trigger', 'sandbox', '--config', file], { ...c.io, env })).toBe(1);
    expect(c.err()).toBe(
      `switchboard: could not reach switchboard at http://127.0.0.1:${port}/hooks/sandbox: connection refused: ` +
        'nothing listens there (port from PORT). Is it running? Start it with `npm start -- serve`, or pass ' +
        '--url BASE_URL where it listens.\n',
    );
    const zero = capture();
    await writeFile(file, 'providers:\n  sandbox: { trust_mode: open }\nserver: { port: 0 }\n');
    expect(await main(['trigger', 'sandbox', '--config', file], { ...zero.io, env: {} })).toBe(2);
    expect(zero.err()).toContain(
      'switchboard: serve listens on a free port of its choosing (port 0, server.port); pass --url',
    );
  });

  it('names the unset variable a missing secret or token was to come from', async () => {
    const dir = await tempDir('sb-trigger-unset-');
    const file = join(dir, 'sb.yaml');
    await writeFile(
      file,
      `${PROVIDERS}  deploys: { trust_mode: token, token: "\${SB_TEST_DEPLOY_TOKEN}" }\n  plain: { preset: stripe }\n`,
    );
    const url = `http://127.0.0.1:${await closedPort()}`;
    for (const [provider, expected] of [
      [
        'github',
        "provider github has no secret configured: ${SB_TEST_GH_SECRET} is not set in trigger's environment, so the sample cannot be signed",
      ],
      [
        'deploys',
        "provider deploys has no token configured: ${SB_TEST_DEPLOY_TOKEN} is not set in trigger's environment, so the sample cannot be authenticated",
      ],
      // No variable to name: the secret was never configured.
      ['plain', 'provider plain has no secret configured, so the sample cannot be signed'],
    ]) {
      const c = capture();
      expect(await main(['trigger', provider ?? '', '--config', file, '--url', url], { ...c.io, env: {} })).toBe(2);
      expect(c.err()).toBe(`switchboard: ${expected}\n`);
    }
  });
});
