/**
 * The product's wiring (buildSurfaces) served by the product's HTTP server module on 127.0.0.1
 * port 0, over a database the test already has: what every in-process harness stands on. The
 * harnesses differ only in the config and the overrides they pass.
 * No vitest import: bench/ may use it too.
 */
import type { Server } from 'node:http';
import { listenHttp } from '../../src/http/http-server.ts';
import { buildSurfaces, type Surfaces } from '../../src/server/build-surfaces.ts';
import type { SurfaceDeps } from '../../src/server/surface-deps.ts';
import { LOOPBACK } from './local-server.ts';

export interface ServedSurfaces {
  surfaces: Surfaces;
  server: Server;
  port: number;
  /** http://127.0.0.1:<port> */
  url: string;
  /** Ends streams and sessions, cuts every connection, then stops every part (not the pool). */
  close(): Promise<void>;
}

export async function serveSurfaces(
  deps: Omit<SurfaceDeps, 'bindHost' | 'redisUrl' | 'envToken'> & { envToken?: string | undefined },
): Promise<ServedSurfaces> {
  const surfaces = await buildSurfaces({
    ...deps,
    bindHost: LOOPBACK,
    redisUrl: undefined,
    envToken: deps.envToken,
  });
  try {
    const handleRequest = surfaces.app.callback();
    const http = await listenHttp((req, res) => void handleRequest(req, res), { host: LOOPBACK, port: 0 });
    await surfaces.listening({ host: LOOPBACK, port: http.port });
    return {
      surfaces,
      server: http.server,
      port: http.port,
      url: http.url,
      close: async () => {
        await surfaces.stopForwarding(1_000);
        // A test ends with its connections wherever they are: no waiting for them to finish.
        await http.drain({ timeoutMs: 0, onDraining: () => surfaces.endStreams() });
        await surfaces.close(0);
      },
    };
  } catch (err) {
    await surfaces.close(0);
    throw err;
  }
}
