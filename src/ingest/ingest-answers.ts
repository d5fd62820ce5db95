/**
 * The answers ingest gives besides "stored": a route with no provider (naming the sender its
 * headers point to), an open provider's delivery signed by a catalog provider, and a handshake.
 */
import type { Context } from 'koa';
import { notFound } from '../errors/app-error.ts';
import { sendError } from '../http/error-response.ts';
import type { Logger } from '../log/logger.ts';
import { HOOKS_PREFIX } from '../shared/route-prefixes.ts';
import type { HandshakeAnswer } from '../verify/handshakes.ts';
import { senderHint } from '../verify/sender-hint.ts';

/**
 * A request to a route with no (enabled) provider: 404 as ever, and when its headers carry a
 * catalog provider's signature header, the answer and the log say which provider and what config
 * would take it, so the first unknown delivery turns into a working config.
 */
export function noProvider(ctx: Context): void {
  const segment = ctx.path.slice(HOOKS_PREFIX.length + 1);
  const hint = senderHint(SNIPPET_NAME.test(segment) ? segment : 'my-provider', Object.keys(ctx.req.headers));
  if (hint === undefined) return sendError(ctx, notFound(`no webhook provider at ${ctx.path}`));
  const [config] = hint.config.split('\n');
  ctx.state.log.info({ path: ctx.path, presets: hint.presets, config: hint.config }, hint.message);
  sendError(ctx, notFound(`no webhook provider at ${ctx.path}; ${hint.message}, e.g. under providers: ${config}`));
}

/** A name a snippet can use as the provider's key as it is (the route's last part, usually). */
const SNIPPET_NAME = /^[a-z0-9][a-z0-9_-]{0,39}$/;

/** An open provider's delivery that carries a catalog provider's signature: the log names who sent it. */
export function logSenderHint(providerName: string, ctx: Context, log: () => Logger): void {
  const hint = senderHint(providerName, Object.keys(ctx.req.headers));
  if (hint !== undefined)
    log().info({ provider: providerName, presets: hint.presets, config: hint.config }, hint.message);
}

/** The handshake's answer as the provider expects it: JSON, plain text (nosniff), or 204. */
export function sendHandshakeAnswer(ctx: Context, answer: HandshakeAnswer): void {
  // For the deliveries metric (metrics/instrument.ts), which counts handshakes apart.
  ctx.state.handshake = true;
  ctx.status = answer.status;
  if (answer.body === null) return;
  if ('json' in answer.body) {
    ctx.body = answer.body.json;
    return;
  }
  ctx.type = 'text/plain; charset=utf-8';
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.body = answer.body.text;
}
