import type { Middleware } from 'koa';
import type { ServerRole } from '../../generated/types.ts';
import type { Health } from '../../generated/types.ts';
import { methodNotAllowed } from '../errors/app-error.ts';
import { sendError } from './error-response.ts';

/**
 * Public liveness (schemas/health.schema.json): whether the database answers and which role this
 * process runs, so a load balancer or an orchestrator can tell ingest from worker processes.
 * Never anything about events.
 */
export function healthRoute(isDatabaseUp: () => Promise<boolean>, role: ServerRole): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== '/healthz') {
      await next();
      return;
    }
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      sendError(ctx, methodNotAllowed(ctx.method, ctx.path, ['GET', 'HEAD']));
      return;
    }
    const up = await isDatabaseUp().catch(() => false);
    ctx.set('Cache-Control', 'no-store');
    ctx.status = up ? 200 : 503;
    const body: Health = { status: up ? 'ok' : 'db down', role };
    ctx.body = body;
  };
}
