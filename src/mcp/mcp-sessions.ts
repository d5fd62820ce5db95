/**
 * The session table of /mcp. Each session is its own Server + StreamableHTTPServerTransport pair,
 * so server-initiated notifications (resource updates) have a stream to travel on. Sessions are
 * capped in number, bound to the token name that opened them, expired when idle and ended by
 * DELETE, by their transport closing, or by closeAll at shutdown.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Context } from 'koa';
import { watchCaller } from '../auth/require-bearer.ts';
import type { Caller } from '../auth/token-service.ts';
import type { EventBus } from '../bus/event-bus.ts';
import { AppError } from '../errors/app-error.ts';
import type { Logger } from '../log/logger.ts';
import { createCoalescingNotifier, type CoalescingNotifier } from './coalescing-notifier.ts';
import { createMcpServer, type McpServerDeps } from './create-mcp-server.ts';
import { jsonRpcError } from './http-responses.ts';
import { RECENT_EVENTS_URI } from './recent-events-resource.ts';

export const RESOURCE_NOTIFY_INTERVAL_MS = 250;
const RETRY_AFTER_FULL_SECONDS = 5;
/**
 * A session that has sent nothing for this long and holds no stream is taken to be abandoned once
 * its caller is at the per-caller cap. Health checks (`claude mcp list`, mcp-remote, the Inspector
 * CLI) open a session and exit without DELETE; without this, ten of them in one idle period lock
 * their token out. A burst of new sessions still meets the cap: only quiet ones are reclaimed.
 */
export const ABANDONED_SESSION_MS = 60_000;

export interface McpSessionsOptions {
  server: McpServerDeps;
  /** ResolvedConfig.mcp. */
  limits: { maxSessions: number; maxSessionsPerCaller: number; sessionIdleSeconds: number };
  /** New-event announcements, for resource subscriptions. */
  bus: Pick<EventBus, 'subscribe'>;
  /** Takes one token from the caller's read bucket; throws AppError rate_limited when it is empty. */
  checkReadLimit: (caller: string) => void;
  log: Logger;
  /** Least time between two resource-updated notifications to one session; default 250 ms. */
  notifyIntervalMs?: number;
  /** SSE keep-alive comment interval; default the SDK's (15 s). */
  keepAliveMs?: number;
  /** Quiet time after which a caller at its cap gets its oldest such session reclaimed; default ABANDONED_SESSION_MS. */
  abandonedAfterMs?: number;
}

export interface McpSessions {
  /**
   * Starts a session with an initialize request; throws rate_limited when the caller holds its
   * share, answers 503 when the table is full or closing.
   */
  open(ctx: Context, caller: Caller, body: unknown): Promise<void>;
  /** Hands a request to the caller's session with that id, or answers 404 Session not found. */
  forward(ctx: Context, caller: Caller, sessionId: string, body: unknown): Promise<void>;
  count(): number;
  /** Ends every session (open SSE streams close); new sessions are refused from then on. */
  closeAll(): Promise<void>;
}

interface Session {
  id: string;
  /** The token that opened it: only that token (by identity, not name) may use it. */
  readonly caller: Caller;
  readonly server: Server;
  readonly transport: StreamableHTTPServerTransport;
  readonly notifier: CoalescingNotifier;
  subscribed: boolean;
  /**
   * Client requests in progress (POST, DELETE): a session with one is never idle. An open GET
   * stream is not one: it only carries what the server sends, and a client that sends nothing for
   * session_idle_seconds has left its session idle, whether or not a stream is open.
   */
  inflight: number;
  /** Open GET streams: a client holding one is listening, so its session is not abandoned. */
  streams: number;
  /** When the client last sent a request (or one finished). */
  lastActive: number;
  /** Ends the watch on the caller's token. */
  stopWatching: () => void;
  closed: boolean;
}

export function createMcpSessions(options: McpSessionsOptions): McpSessions {
  const { log, limits } = options;
  const idleMs = limits.sessionIdleSeconds * 1000;
  const now = (): number => performance.now();
  const sessions = new Map<string, Session>();
  /** Sessions being initialized: they count against the cap before they have an id. */
  let reserved = 0;
  let closing = false;

  const closeSession = async (session: Session, why: string): Promise<void> => {
    if (session.closed) return;
    session.closed = true;
    session.stopWatching();
    session.notifier.cancel();
    if (sessions.get(session.id) === session) sessions.delete(session.id);
    log.debug({ sessionId: session.id, caller: session.caller.name, why }, 'MCP session ended');
    await session.server.close().catch((err: unknown) => log.warn({ err }, 'closing an MCP session failed'));
  };

  const expireIdle = (): void => {
    const cutoff = now() - idleMs;
    for (const session of [...sessions.values()]) {
      if (session.inflight === 0 && session.lastActive < cutoff) void closeSession(session, 'idle');
    }
  };
  const sweeper = setInterval(expireIdle, Math.max(1_000, Math.min(idleMs / 2, 30_000)));
  sweeper.unref();

  const unsubscribeBus = options.bus.subscribe(() => {
    for (const session of sessions.values()) if (session.subscribed) session.notifier.trigger();
  });

  /** Hands the raw request to the session's transport; headers set on ctx so far are on the raw response already. */
  const handOver = async (ctx: Context, session: Session, body: unknown): Promise<void> => {
    ctx.respond = false;
    session.lastActive = now();
    if (ctx.method === 'GET') {
      session.streams += 1;
      ctx.res.once('close', () => {
        session.streams -= 1;
      });
    } else {
      session.inflight += 1;
      ctx.res.once('close', () => {
        session.inflight -= 1;
        session.lastActive = now();
      });
    }
    await session.transport.handleRequest(ctx.req, ctx.res, body);
  };

  const full = (): boolean => sessions.size + reserved >= limits.maxSessions;

  /** Sessions a caller holds, being initialized included. */
  const reservedBy = new Map<string, number>();
  const sessionsOf = (caller: Caller): number => {
    let count = reservedBy.get(caller.id) ?? 0;
    for (const session of sessions.values()) if (session.caller.id === caller.id) count += 1;
    return count;
  };
  const reserve = (caller: Caller, delta: 1 | -1): void => {
    const next = (reservedBy.get(caller.id) ?? 0) + delta;
    if (next > 0) reservedBy.set(caller.id, next);
    else reservedBy.delete(caller.id);
  };

  const abandonedAfterMs = options.abandonedAfterMs ?? ABANDONED_SESSION_MS;
  /** Ends the caller's longest-quiet session that has no request in flight, no stream, and has been quiet long enough. */
  const reclaimAbandoned = async (caller: Caller): Promise<void> => {
    const cutoff = now() - abandonedAfterMs;
    let oldest: Session | undefined;
    for (const session of sessions.values()) {
      if (session.caller.id !== caller.id || session.inflight > 0 || session.streams > 0) continue;
      if (session.lastActive >= cutoff) continue;
      if (oldest === undefined || session.lastActive < oldest.lastActive) oldest = session;
    }
    if (oldest !== undefined) await closeSession(oldest, 'abandoned: its caller opened a new one at the cap');
  };

  const open = async (ctx: Context, caller: Caller, body: unknown): Promise<void> => {
    // A session holds memory and a stream; starting one costs a read, like a call does.
    options.checkReadLimit(caller.name);
    const perCaller = limits.maxSessionsPerCaller;
    if (!closing && sessionsOf(caller) >= perCaller) expireIdle();
    if (!closing && sessionsOf(caller) >= perCaller) await reclaimAbandoned(caller);
    if (!closing && sessionsOf(caller) >= perCaller) {
      // One caller must not be able to take the slots every other caller needs.
      throw new AppError(
        'rate_limited',
        `this token already holds ${perCaller} MCP sessions (mcp.max_sessions_per_caller); end an unused one (HTTP DELETE) or retry later`,
        { retryAfterSeconds: RETRY_AFTER_FULL_SECONDS },
      );
    }
    if (!closing && full()) expireIdle();
    if (closing || full()) {
      ctx.set('Retry-After', String(RETRY_AFTER_FULL_SECONDS));
      const why = closing ? 'the server is shutting down' : `too many MCP sessions (limit ${limits.maxSessions})`;
      jsonRpcError(ctx, 503, -32000, `${why}; end an unused session (HTTP DELETE) or retry later`);
      return;
    }
    reserved += 1;
    reserve(caller, 1);
    let registered = false;
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        session.id = id;
        sessions.set(id, session);
        reserved -= 1;
        reserve(caller, -1);
        registered = true;
        log.debug({ sessionId: id, caller: caller.name }, 'MCP session started');
      },
      ...(options.keepAliveMs === undefined ? {} : { keepAliveMs: options.keepAliveMs }),
    });
    const server = createMcpServer(options.server, {
      caller: caller.name,
      subscribe: (uri) => {
        if (uri === RECENT_EVENTS_URI) session.subscribed = true;
      },
      unsubscribe: (uri) => {
        if (uri === RECENT_EVENTS_URI) session.subscribed = false;
      },
    });
    const session: Session = {
      id: '',
      caller,
      server,
      transport,
      subscribed: false,
      inflight: 0,
      streams: 0,
      lastActive: now(),
      // A revoked token's sessions end, GET streams and subscriptions with them.
      stopWatching: watchCaller(ctx, () => void closeSession(session, 'token revoked')),
      closed: false,
      notifier: createCoalescingNotifier(() => {
        server
          .sendResourceUpdated({ uri: RECENT_EVENTS_URI })
          .catch((err: unknown) => log.debug({ err }, 'resource update not delivered'));
      }, options.notifyIntervalMs ?? RESOURCE_NOTIFY_INTERVAL_MS),
    };
    transport.onerror = (err) =>
      log.debug({ err: err.message, caller: caller.name }, 'MCP transport refused a request');
    await server.connect(transport);
    // Set after connect, which wraps the transport's callbacks: DELETE, idle expiry and closeAll all end here.
    server.onclose = () => void closeSession(session, 'closed');
    try {
      await handOver(ctx, session, body);
    } finally {
      if (!registered) {
        reserved -= 1;
        reserve(caller, -1);
        await closeSession(session, 'initialize failed');
      } else if (closing) {
        // closeAll ran while this session was being set up, so it was not among those it ended.
        await closeSession(session, 'shutdown');
      }
    }
  };

  const forward = async (ctx: Context, caller: Caller, sessionId: string, body: unknown): Promise<void> => {
    const session = sessions.get(sessionId);
    // Another token's session looks exactly like an unknown one: ids are not shared between
    // tokens, not even between a revoked token and a new one given the same name.
    if (session === undefined || session.closed || session.caller.id !== caller.id) {
      jsonRpcError(ctx, 404, -32001, 'Session not found');
      return;
    }
    await handOver(ctx, session, body);
  };

  return {
    open,
    forward,
    count: () => sessions.size,
    async closeAll() {
      closing = true;
      clearInterval(sweeper);
      unsubscribeBus();
      await Promise.all([...sessions.values()].map((session) => closeSession(session, 'shutdown')));
    },
  };
}
