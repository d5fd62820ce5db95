import type { Middleware } from 'koa';
import type { DatabasePool } from 'slonik';
import type { Metrics } from './metrics.ts';

export interface MetricsRouteOptions {
  metrics: Metrics;
  /** requireBearer(...) when metrics.require_auth is on (the default); undefined serves them openly. */
  authenticate: Middleware | undefined;
}

/** GET /metrics in Prometheus text format. */
export function metricsRoute(options: MetricsRouteOptions): Middleware {
  const serve: Middleware = async (ctx) => {
    ctx.set('Content-Type', options.metrics.registry.contentType);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await options.metrics.registry.metrics();
  };
  return async (ctx, next) => {
    if (ctx.path !== '/metrics') return next();
    if (ctx.method !== 'GET') {
      ctx.status = 405;
      ctx.set('Allow', 'GET');
      ctx.body = { error: { code: 'invalid_argument', message: 'method not allowed' } };
      return;
    }
    if (options.authenticate) return options.authenticate(ctx, () => serve(ctx, next));
    return serve(ctx, next);
  };
}

/**
 * Pool saturation and session counts are states, not events: read them when Prometheus scrapes
 * rather than tracking every change.
 */
export function observePool(metrics: Metrics, pool: DatabasePool, mcpSessions: () => number): () => void {
  const collect = (): void => {
    const state = pool.state();
    metrics.dbPool.set({ state: 'active' }, state.acquiredConnections);
    metrics.dbPool.set({ state: 'idle' }, state.idleConnections);
    metrics.dbPool.set({ state: 'waiting' }, state.waitingClients);
    metrics.mcpSessions.set(mcpSessions());
  };
  const timer = setInterval(collect, 5_000);
  timer.unref();
  collect();
  return () => clearInterval(timer);
}
