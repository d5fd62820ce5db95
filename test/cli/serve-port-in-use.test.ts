/**
 * `serve` on a port another program holds stops at once, before the embedded PostgreSQL starts,
 * with one plain sentence naming the port and exit 2: no stack, no log line, no cluster made.
 */
import { chmod, readdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { childEnv, cliOutcome, tempDir } from './support/cli-process.ts';

describe('serve on a port in use', () => {
  it('exits 2 naming the port before starting the database', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    const { port } = holder.address() as AddressInfo;
    const parent = await tempDir('sb-port-in-use-');
    // Reachable for the postgres user as root, so a start that did reach the database would make
    // its cluster right here, where the test can see it.
    await chmod(parent, 0o755);
    const dataDir = join(parent, 'data');
    const outcome = await cliOutcome(
      ['serve', '--port', String(port)],
      childEnv({ SWITCHBOARD_DATA_DIR: dataDir, LOG_LEVEL: 'info' }),
    );
    expect(outcome.stderr).toBe(
      `switchboard: port ${port} on 127.0.0.1 is already in use: another switchboard or another program listens ` +
        'there. Stop it, or choose another port (--port, PORT or server.port; 0 picks a free one).\n',
    );
    expect(outcome.code).toBe(2);
    expect(outcome.stdout).toBe('');
    // Nothing of the database was started: the data directory was not even made.
    expect(await readdir(parent)).toEqual([]);
  }, 60_000);
});
