import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../log/logger.ts';

const SAFE_ID = /^[A-Za-z0-9._-]{1,64}$/;

declare module 'koa' {
  interface DefaultState {
    requestId: string;
    log: Logger;
  }
}

/** Gives each request an id (a caller's X-Request-Id when it is safe to echo) and a logger bound to it. */
export function requestId(logger: Logger): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const id = SAFE_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = id;
    // Built on first use: most requests (every accepted webhook) log nothing, and a pino child
    // costs microseconds that a busy receiver pays per request.
    let child: Logger | undefined;
    Object.defineProperty(ctx.state, 'log', {
      get: () => (child ??= logger.child({ requestId: id })),
      enumerable: true,
      configurable: true,
    });
    ctx.set('X-Request-Id', id);
    const started = performance.now();
    try {
      await next();
    } finally {
      if (logger.isLevelEnabled('debug')) {
        ctx.state.log.debug(
          { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(performance.now() - started) },
          'request',
        );
      }
    }
  };
}
