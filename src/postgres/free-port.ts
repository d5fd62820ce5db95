import { createServer } from 'node:net';

/**
 * PostgreSQL's well-known port; an embedded server never takes it, so it never shadows a real one.
 * @internal outside src/, only tests or benches use it
 */
export const POSTGRES_DEFAULT_PORT = 5432;

/**
 * A TCP port on 127.0.0.1 that was free a moment ago, chosen by the kernel. Someone may still take
 * it before PostgreSQL binds it, so callers retry with a fresh port when the bind fails.
 */
export async function findFreePort(host = '127.0.0.1'): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.unref();
      server.once('error', reject);
      server.listen({ port: 0, host, exclusive: true }, () => {
        const address = server.address();
        const chosen = typeof address === 'object' && address ? address.port : 0;
        server.close(() => resolve(chosen));
      });
    });
    if (port !== 0 && port !== POSTGRES_DEFAULT_PORT) return port;
  }
}
