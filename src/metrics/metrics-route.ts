import type { Middleware } from 'koa';
import { Gauge } from 'prom-client';
import type { DatabasePool } from 'slonik';
import { methodNotAllowed } from '../errors/app-error.ts';
import { sendError } from '../http/error-response.ts';
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
    if (ctx.path !== '/metrics') {
      await next();
      return;
    }
    if (ctx.method !== 'GET') {
      sendError(ctx, methodNotAllowed(ctx.method, ctx.path, ['GET']));
      return;
    }
    if (options.authenticate)
      await options.authenticate(ctx, async () => {
        await serve(ctx, next);
      });
    else await serve(ctx, next);
  };
}

const DB_POOL_METRIC = 'switchboard_db_pool_connections';
const MCP_SESSIONS_METRIC = 'switchboard_mcp_sessions';

/**
 * Pool saturation and session counts are states, not events: they are read from the pool and the
 * MCP surface while Prometheus scrapes (a gauge's collect), so every scrape is current and nothing
 * runs between scrapes. Returns a function that unregisters the two gauges.
 */
export function observePool(
  metrics: Metrics,
  pool: Pick<DatabasePool, 'state'>,
  mcpSessions: () => number,
): () => void {
  const { registry } = metrics;
  // A registry shared by two servers (StartOptions.metrics) reports the newest one, not a clash.
  for (const name of [DB_POOL_METRIC, MCP_SESSIONS_METRIC]) registry.removeSingleMetric(name);
  const dbPool = new Gauge({
    name: DB_POOL_METRIC,
    help: 'Database pool connections by state (active, idle, waiting requests).',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const state = pool.state();
      this.set({ state: 'active' }, state.acquiredConnections);
      this.set({ state: 'idle' }, state.idleConnections);
      this.set({ state: 'waiting' }, state.waitingClients);
    },
  });
  const sessions = new Gauge({
    name: MCP_SESSIONS_METRIC,
    help: 'Open MCP sessions.',
    registers: [registry],
    collect() {
      this.set(mcpSessions());
    },
  });
  const owned: ReadonlyArray<readonly [string, unknown]> = [
    [DB_POOL_METRIC, dbPool],
    [MCP_SESSIONS_METRIC, sessions],
  ];
  return () => {
    for (const [name, gauge] of owned) if (registry.getSingleMetric(name) === gauge) registry.removeSingleMetric(name);
  };
}

const FORWARD_PENDING_METRIC = 'switchboard_forward_pending';
const FORWARD_OLDEST_PENDING_METRIC = 'switchboard_forward_oldest_pending_seconds';

/** One rule's backlog as the forward gauges report it. */
export interface ForwardBacklog {
  rule: string;
  pending: number;
  oldestPendingAge: number | null;
}

/**
 * Forwarding's backlog per rule, read from the database while Prometheus scrapes (the rows are
 * shared by every instance, so each reports the same totals). Returns the unregister function.
 */
export function observeForwarding(metrics: Metrics, backlog: () => Promise<readonly ForwardBacklog[]>): () => void {
  const { registry } = metrics;
  for (const name of [FORWARD_PENDING_METRIC, FORWARD_OLDEST_PENDING_METRIC]) registry.removeSingleMetric(name);
  // One read serves both gauges of a scrape.
  let reading: Promise<readonly ForwardBacklog[]> | undefined;
  const read = (): Promise<readonly ForwardBacklog[]> => {
    // With the database down the gauges keep their last values; /metrics itself must still answer.
    reading ??= backlog()
      .catch(() => [])
      .finally(() => {
        reading = undefined;
      });
    return reading;
  };
  const pending = new Gauge({
    name: FORWARD_PENDING_METRIC,
    help: 'Forward deliveries not yet delivered and not dead, by rule.',
    labelNames: ['rule'],
    registers: [registry],
    async collect() {
      for (const row of await read()) this.set({ rule: row.rule }, row.pending);
    },
  });
  const oldest = new Gauge({
    name: FORWARD_OLDEST_PENDING_METRIC,
    help: 'Age in seconds of the oldest pending forward delivery, by rule (0 when none waits).',
    labelNames: ['rule'],
    registers: [registry],
    async collect() {
      for (const row of await read()) this.set({ rule: row.rule }, row.oldestPendingAge ?? 0);
    },
  });
  const owned: ReadonlyArray<readonly [string, unknown]> = [
    [FORWARD_PENDING_METRIC, pending],
    [FORWARD_OLDEST_PENDING_METRIC, oldest],
  ];
  return () => {
    for (const [name, gauge] of owned) if (registry.getSingleMetric(name) === gauge) registry.removeSingleMetric(name);
  };
}
