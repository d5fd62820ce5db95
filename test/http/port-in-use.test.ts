/**
 * A port someone else listens on is named, with what to do, both by start-up's check before the
 * database and by the real listen (should the port be taken in between).
 */
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenHttp } from '../../src/http/http-server.ts';
import { ensurePortFree, PortInUseError } from '../../src/http/port-in-use.ts';
import { closedPort } from '../support/local-server.ts';

describe('a port in use', () => {
  let holder: Server;
  let port: number;

  beforeAll(async () => {
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    port = (holder.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => holder.close(() => resolve())));

  const expected = (): string =>
    `port ${port} on 127.0.0.1 is already in use: another switchboard or another program listens there. ` +
    'Stop it, or choose another port (--port, PORT or server.port; 0 picks a free one).';

  it('is found before anything starts, and a free port or port 0 passes', async () => {
    const refused = await ensurePortFree('127.0.0.1', port).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(PortInUseError);
    expect((refused as Error).message).toBe(expected());
    await expect(ensurePortFree('127.0.0.1', await closedPort())).resolves.toBeUndefined();
    await expect(ensurePortFree('127.0.0.1', 0)).resolves.toBeUndefined();
  });

  it('is said the same way by the real listen, not as Node\'s "listen EADDRINUSE"', async () => {
    const refused = await listenHttp(() => undefined, { host: '127.0.0.1', port }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(PortInUseError);
    expect((refused as Error).message).toBe(expected());
    expect((refused as Error).cause).toMatchObject({ code: 'EADDRINUSE' });
  });
});
