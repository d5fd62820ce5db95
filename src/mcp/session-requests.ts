/**
 * A request's time in its session: handed to the session's transport, counted while it runs (a
 * session with a request in progress is never idle), and, when the session ends under it, told
 * why and given a moment to send that answer.
 */
import type { ServerResponse } from 'node:http';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Context } from 'koa';
import type { AppError } from '../errors/app-error.ts';

/**
 * How long a closing session gives its running calls to deliver the answer they were just told to
 * send (a wait ends at once when its session does); past it the session closes regardless.
 */
const ANSWER_GRACE_MS = 2_000;

/** What of a session its requests change or wait on. */
export interface RequestCounts {
  readonly transport: StreamableHTTPServerTransport;
  inflight: number;
  streams: number;
  lastActive: number;
  readonly ending: AbortController;
  readonly posts: Set<Promise<void>>;
}

/** Hands the raw request to the session's transport; headers set on ctx so far are on the raw response already. */
export async function handOver(ctx: Context, session: RequestCounts, body: unknown, now: () => number): Promise<void> {
  ctx.respond = false;
  session.lastActive = now();
  if (ctx.method === 'GET') {
    session.streams += 1;
    ctx.res.once('close', () => {
      session.streams -= 1;
    });
  } else {
    session.inflight += 1;
    if (ctx.method === 'POST') trackPost(session, ctx.res);
    ctx.res.once('close', () => {
      session.inflight -= 1;
      session.lastActive = now();
    });
  }
  await session.transport.handleRequest(ctx.req, ctx.res, body);
}

function trackPost(session: RequestCounts, res: ServerResponse): void {
  const closed = new Promise<void>((resolve) => res.once('close', resolve));
  session.posts.add(closed);
  void closed.then(() => session.posts.delete(closed));
}

/** Tells the session's running calls why it ends, and gives their answers a moment to leave. */
export async function answerRunningCalls(session: RequestCounts, ending: AppError): Promise<void> {
  if (!session.ending.signal.aborted) session.ending.abort(ending);
  if (session.posts.size === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(session.posts),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ANSWER_GRACE_MS);
    }),
  ]);
  clearTimeout(timer);
}
