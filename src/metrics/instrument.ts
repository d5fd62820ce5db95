/**
 * Metrics are taken at the seams the composition root already holds (a surface's response, a
 * service's promise, a limiter's throw), so the modules themselves stay free of metrics code.
 */
import type { Middleware } from 'koa';
import type { ProviderConfig } from '../config/resolve-config.ts';
import { AppError } from '../errors/app-error.ts';
import type { ReplayService } from '../replay/replay-types.ts';
import type { RateClass } from '../auth/rate-limiter.ts';
import type { Metrics } from './metrics.ts';
import { API_PREFIX } from '../shared/route-prefixes.ts';

const INGEST_OUTCOME: Record<number, string> = {
  400: 'bad_request',
  401: 'rejected',
  404: 'not_found',
  405: 'bad_method',
  413: 'too_large',
  503: 'unavailable',
};

/** Counts deliveries by provider and outcome, and times the ones that reached a provider route. */
export function instrumentIngest(
  ingest: Middleware,
  providers: readonly ProviderConfig[],
  metrics: Metrics,
): Middleware {
  const byRoute = new Map(providers.flatMap((p) => (p.family === 'webhook' ? [[p.route, p.name] as const] : [])));
  return async (ctx, next) => {
    const provider = byRoute.get(ctx.path);
    const started = performance.now();
    let passedOn = false;
    await ingest(ctx, async () => {
      passedOn = true;
      await next();
    });
    if (passedOn) return;
    const label = provider ?? 'unknown';
    const body = ctx.body as { duplicate?: unknown } | undefined;
    const handshake = (ctx.state as { handshake?: unknown }).handshake === true;
    const outcome =
      handshake && ctx.status < 300
        ? 'handshake'
        : ctx.status === 200
          ? body?.duplicate === true
            ? 'duplicate'
            : 'stored'
          : (INGEST_OUTCOME[ctx.status] ?? `status_${ctx.status}`);
    metrics.deliveries.inc({ provider: label, outcome });
    if (provider !== undefined) metrics.ingestLatency.observe({ provider }, (performance.now() - started) / 1000);
  };
}

export function instrumentReplay(replay: ReplayService, metrics: Metrics): ReplayService {
  return {
    async replay(request) {
      try {
        const result = await replay.replay(request);
        metrics.replays.inc({ outcome: 'delivered' });
        return result;
      } catch (err) {
        metrics.replays.inc({ outcome: err instanceof AppError ? err.code : 'internal' });
        throw err;
      }
    },
  };
}

/** Wraps a limiter check so each refusal is counted under its bucket class. */
export function countRateLimited(check: (caller: string) => void, rateClass: RateClass, metrics: Metrics) {
  return (caller: string): void => {
    try {
      check(caller);
    } catch (err) {
      if (err instanceof AppError && err.code === 'rate_limited') metrics.rateLimited.inc({ class: rateClass });
      throw err;
    }
  };
}

/** Tracks open /api/stream connections: they end when the response closes. */
export function countStreams(metrics: Metrics): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== `${API_PREFIX}/stream` || ctx.method !== 'GET') {
      await next();
      return;
    }
    await next();
    if (ctx.status !== 200) return;
    metrics.sseClients.inc();
    ctx.res.once('close', () => metrics.sseClients.dec());
  };
}
