import type { Middleware } from 'koa';

/** Headers for JSON surfaces: nothing they return is meant to be rendered, framed or sniffed. */
export const API_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'strict-origin-when-cross-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/**
 * Set before the rest of the chain runs, so every response carries them, including the ones an
 * error handler or a 404 produces further down.
 */
export function securityHeaders(headers: Readonly<Record<string, string>> = API_SECURITY_HEADERS): Middleware {
  return async (ctx, next) => {
    ctx.set(headers as Record<string, string>);
    await next();
  };
}
