/**
 * A port someone else already listens on. Start-up checks it before anything slow (the embedded
 * PostgreSQL, migrations), and the real listen reports the same way should the port be taken in
 * between: one sentence naming the address and what to do, never Node's bare `listen EADDRINUSE`.
 */
import { createServer } from 'node:net';
import { InternalError } from '../errors/internal-error.ts';

export class PortInUseError extends InternalError {
  readonly code = 'SB_ERR_PORT_IN_USE';
  readonly host: string;
  readonly port: number;

  constructor(host: string, port: number, options?: ErrorOptions) {
    super(
      `port ${port} on ${host} is already in use: another switchboard or another program listens there. ` +
        'Stop it, or choose another port (--port, PORT or server.port; 0 picks a free one).',
      options,
    );
    this.host = host;
    this.port = port;
  }
}

export function isAddressInUse(err: unknown): boolean {
  return err instanceof Error && 'code' in err && err.code === 'EADDRINUSE';
}

/**
 * Resolves when host:port can be listened on now, and throws PortInUseError when it cannot. Port 0
 * is always free. Any other failure (a host that is not this machine's) is left to the real listen.
 */
export async function ensurePortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen({ host, port, exclusive: true }, resolve);
    });
  } catch (err) {
    if (isAddressInUse(err)) throw new PortInUseError(host, port, { cause: err });
    return;
  }
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}
