import Koa, { type Middleware } from 'koa';
import { SERVER_ROLE } from '../../generated/constants.ts';
import type { ServerRole } from '../../generated/types.ts';
import type { Logger } from '../log/logger.ts';
import { notFound } from '../errors/app-error.ts';
import { errorHandler } from './error-handler.ts';
import { sendError } from './error-response.ts';
import { requestId } from './request-id.ts';
import { securityHeaders } from './security-headers.ts';
import { healthRoute } from './health-route.ts';

export interface AppOptions {
  logger: Logger;
  isDatabaseUp: () => Promise<boolean>;
  /** What this process runs, as /healthz reports it; default the schema's (all). */
  role?: ServerRole;
  /** Take the client address from X-Forwarded-For. */
  trustProxy: boolean;
  /** Surfaces (ingest, MCP, API, UI, metrics), tried in order after the shared middleware. */
  surfaces: readonly Middleware[];
}

/** What a response stream fails with when the client disconnected. */
const CLIENT_GONE = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'ECONNRESET', 'EPIPE']);

/** The code of an error a client's hang-up causes (ECONNRESET, Premature close, EPIPE), else undefined. */
export function clientGoneCode(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && CLIENT_GONE.has(code) ? code : undefined;
}

export function createApp(options: AppOptions): Koa {
  const app = new Koa({ proxy: options.trustProxy });
  app.silent = true;
  app.on('error', (err: unknown, ctx?: { path?: string }) => {
    // A client that hangs up mid-response (a closed tab, a dropped stream) is not a server fault:
    // it is noted at debug, without a stack, so a crowd of them cannot flood the log.
    const code = clientGoneCode(err);
    if (code !== undefined) {
      options.logger.debug({ code, path: ctx?.path }, 'client went away');
      return;
    }
    options.logger.warn({ err }, 'koa error');
  });
  app.use(requestId(options.logger));
  app.use(securityHeaders());
  app.use(errorHandler(options.logger));
  app.use(healthRoute(options.isDatabaseUp, options.role ?? SERVER_ROLE.default));
  for (const surface of options.surfaces) app.use(surface);
  app.use((ctx) => sendError(ctx, notFound(`no route for ${ctx.method} ${ctx.path}`)));
  return app;
}
