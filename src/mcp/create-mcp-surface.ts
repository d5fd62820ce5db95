/**
 * /mcp: the transport and session plumbing around the switchboard MCP server. Each session is its
 * own Server + StreamableHTTPServerTransport pair, so server-initiated notifications (resource
 * updates) have a stream to travel on. Koa does the HTTP part (host check, auth, body limit);
 * the raw request and response are then handed to the SDK transport with the body already parsed.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Context, Middleware, Next } from 'koa';
import { callerFrom, watchCaller } from '../auth/require-bearer.ts';
import type { Caller } from '../auth/token-service.ts';
import type { EventBus } from '../bus/event-bus.ts';
import { AppError, internalError } from '../errors/app-error.ts';
import { errorBody } from '../http/error-handler.ts';
import {
  DATABASE_RETRY_AFTER_SECONDS,
  DATABASE_UNAVAILABLE_MESSAGE,
  isDatabaseUnavailable,
} from '../errors/database-unavailable.ts';
import { readRawBody } from '../ingest/read-raw-body.ts';
import type { Logger } from '../log/logger.ts';
import type { ProviderDirectory } from '../providers/provider-directory.ts';
import type { ReplayService } from '../replay/replay-types.ts';
import type { EventStore } from '../store/event-store.ts';
import { createCoalescingNotifier, type CoalescingNotifier } from './coalescing-notifier.ts';
import { createMcpServer, type McpServerDeps } from './create-mcp-server.ts';
import { MCP_SECURITY_HEADERS, envelopeError, jsonRpcError, refuseTooLarge } from './http-responses.ts';
import { RECENT_EVENTS_URI } from './recent-events-resource.ts';
import { createSwitchboardTools } from './switchboard-tools.ts';

export const MCP_PATH = '/mcp';
export const MCP_MAX_BODY_BYTES = 1024 * 1024;
export const RESOURCE_NOTIFY_INTERVAL_MS = 250;

export interface McpSurfaceDeps {
  store: Pick<EventStore, 'get' | 'list'>;
  providers: ProviderDirectory;
  /** The shared replay path; it charges the caller's replay bucket itself. */
  replay: ReplayService;
  /** New-event announcements, for resource subscriptions. */
  bus: Pick<EventBus, 'subscribe'>;
  /** Takes one token from the caller's read bucket; throws AppError rate_limited when it is empty. */
  checkReadLimit: (caller: string) => void;
  /** createHostCheck(...): runs first, before authentication. */
  checkHost: Middleware;
  /** requireBearer(tokenService). */
  authenticate: Middleware;
  logger: Logger;
  /** ResolvedConfig.mcp. */
  sessions: { maxSessions: number; maxSessionsPerCaller: number; sessionIdleSeconds: number };
  /** Reported as serverInfo.version; default package.json's. */
  version?: string;
  /** Default 1 MiB. */
  maxBodyBytes?: number;
  /** Least time between two resource-updated notifications to one session; default 250 ms. */
  notifyIntervalMs?: number;
  /** SSE keep-alive comment interval; default the SDK's (15 s). */
  keepAliveMs?: number;
}

export interface McpSurface {
  /** Koa middleware serving /mcp (and refusing /mcp/*); everything else goes to next(). */
  middleware: Middleware;
  /** Ends every session (open SSE streams close); new sessions are refused from then on. */
  closeAll(): Promise<void>;
  sessionCount(): number;
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
  /** When the client last sent a request (or one finished). */
  lastActive: number;
  /** Ends the watch on the caller's token. */
  stopWatching: () => void;
  closed: boolean;
}

/** Read after an oversized body before the connection is dropped instead. */
const DISCARD_LIMIT_BYTES = 8 * 1024 * 1024;
const DISCARD_TIMEOUT_MS = 5_000;
const RETRY_AFTER_FULL_SECONDS = 5;

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}

function compose(middleware: readonly Middleware[]): (ctx: Context, next: Next) => Promise<void> {
  return (ctx, next) => {
    const run = async (i: number): Promise<void> => {
      const m = middleware[i];
      if (m === undefined) return next();
      await m(ctx, () => run(i + 1));
    };
    return run(0);
  };
}

/** The media type alone, parameters (charset) ignored; a substring match would let `text/plain; x=application/json` through. */
function isJsonContentType(header: string | undefined): boolean {
  return header !== undefined && (header.split(';', 1)[0] ?? '').trim().toLowerCase() === 'application/json';
}

const isInitialize = (body: unknown): boolean =>
  Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body);

export function createMcpSurface(deps: McpSurfaceDeps): McpSurface {
  const log = deps.logger.child({ component: 'mcp' });
  const maxBodyBytes = deps.maxBodyBytes ?? MCP_MAX_BODY_BYTES;
  const idleMs = deps.sessions.sessionIdleSeconds * 1000;
  const now = (): number => performance.now();
  const serverDeps: McpServerDeps = {
    tools: createSwitchboardTools({ ...deps, logger: log }),
    resource: { store: deps.store, checkReadLimit: deps.checkReadLimit, logger: log },
    version: deps.version ?? packageVersion(),
  };

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

  const unsubscribeBus = deps.bus.subscribe(() => {
    for (const session of sessions.values()) if (session.subscribed) session.notifier.trigger();
  });

  /** Hands the raw request to the session's transport; headers set on ctx so far are on the raw response already. */
  const forward = async (ctx: Context, session: Session, body: unknown): Promise<void> => {
    ctx.respond = false;
    session.lastActive = now();
    if (ctx.method !== 'GET') {
      session.inflight += 1;
      ctx.res.once('close', () => {
        session.inflight -= 1;
        session.lastActive = now();
      });
    }
    await session.transport.handleRequest(ctx.req, ctx.res, body);
  };

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

  const openSession = async (ctx: Context, caller: Caller, body: unknown): Promise<void> => {
    // A session holds memory and a stream; starting one costs a read, like a call does.
    deps.checkReadLimit(caller.name);
    const perCaller = deps.sessions.maxSessionsPerCaller;
    if (!closing && sessionsOf(caller) >= perCaller) expireIdle();
    if (!closing && sessionsOf(caller) >= perCaller) {
      // One caller must not be able to take the slots every other caller needs.
      throw new AppError(
        'rate_limited',
        `this token already holds ${perCaller} MCP sessions (mcp.max_sessions_per_caller); end an unused one (HTTP DELETE) or retry later`,
        { retryAfterSeconds: RETRY_AFTER_FULL_SECONDS },
      );
    }
    if (!closing && sessions.size + reserved >= deps.sessions.maxSessions) expireIdle();
    if (closing || sessions.size + reserved >= deps.sessions.maxSessions) {
      ctx.set('Retry-After', String(RETRY_AFTER_FULL_SECONDS));
      const why = closing
        ? 'the server is shutting down'
        : `too many MCP sessions (limit ${deps.sessions.maxSessions})`;
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
      ...(deps.keepAliveMs === undefined ? {} : { keepAliveMs: deps.keepAliveMs }),
    });
    const server = createMcpServer(serverDeps, {
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
      lastActive: now(),
      // A revoked token's sessions end, GET streams and subscriptions with them.
      stopWatching: watchCaller(ctx, () => void closeSession(session, 'token revoked')),
      closed: false,
      notifier: createCoalescingNotifier(() => {
        server
          .sendResourceUpdated({ uri: RECENT_EVENTS_URI })
          .catch((err: unknown) => log.debug({ err }, 'resource update not delivered'));
      }, deps.notifyIntervalMs ?? RESOURCE_NOTIFY_INTERVAL_MS),
    };
    transport.onerror = (err) =>
      log.debug({ err: err.message, caller: caller.name }, 'MCP transport refused a request');
    await server.connect(transport);
    // Set after connect, which wraps the transport's callbacks: DELETE, idle expiry and closeAll all end here.
    server.onclose = () => void closeSession(session, 'closed');
    try {
      await forward(ctx, session, body);
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

  const handlePost = async (ctx: Context, caller: Caller): Promise<void> => {
    if (!isJsonContentType(ctx.req.headers['content-type'])) {
      jsonRpcError(ctx, 415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
      return;
    }
    const declared = ctx.req.headers['content-length'];
    if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > maxBodyBytes) {
      refuseTooLarge(ctx, maxBodyBytes, DISCARD_LIMIT_BYTES, DISCARD_TIMEOUT_MS);
      return;
    }
    const raw = await readRawBody(ctx.req, maxBodyBytes);
    if (raw.kind === 'too_large') {
      refuseTooLarge(ctx, maxBodyBytes, DISCARD_LIMIT_BYTES, DISCARD_TIMEOUT_MS);
      return;
    }
    if (raw.kind === 'aborted') {
      envelopeError(ctx, 400, 'invalid_argument', 'request body incomplete');
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.body.toString('utf8'));
    } catch {
      jsonRpcError(ctx, 400, -32700, 'Parse error: Invalid JSON');
      return;
    }
    const sessionId = ctx.get('mcp-session-id');
    if (sessionId !== '') return handleInSession(ctx, caller, sessionId, body);
    if (!isInitialize(body)) {
      jsonRpcError(ctx, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      return;
    }
    return openSession(ctx, caller, body);
  };

  const handleInSession = async (ctx: Context, caller: Caller, sessionId: string, body: unknown): Promise<void> => {
    const session = sessions.get(sessionId);
    // Another token's session looks exactly like an unknown one: ids are not shared between
    // tokens, not even between a revoked token and a new one given the same name.
    if (session === undefined || session.closed || session.caller.id !== caller.id) {
      jsonRpcError(ctx, 404, -32001, 'Session not found');
      return;
    }
    await forward(ctx, session, body);
  };

  const handle: Middleware = async (ctx) => {
    if (ctx.path !== MCP_PATH) {
      envelopeError(ctx, 404, 'not_found', `no route for ${ctx.method} ${ctx.path}`);
      return;
    }
    const caller = callerFrom(ctx);
    if (ctx.method === 'POST') return handlePost(ctx, caller);
    if (ctx.method === 'GET' || ctx.method === 'DELETE') {
      const sessionId = ctx.get('mcp-session-id');
      if (sessionId === '') {
        jsonRpcError(ctx, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
        return;
      }
      return handleInSession(ctx, caller, sessionId, undefined);
    }
    ctx.set('Allow', 'GET, POST, DELETE');
    envelopeError(ctx, 405, 'invalid_argument', `method ${ctx.method} not allowed on ${MCP_PATH}`);
  };

  const chain = compose([deps.checkHost, deps.authenticate, handle]);

  const middleware: Middleware = async (ctx, next) => {
    if (ctx.path !== MCP_PATH && !ctx.path.startsWith(`${MCP_PATH}/`)) return next();
    ctx.set(MCP_SECURITY_HEADERS as Record<string, string>);
    ctx.set('Cache-Control', 'no-store');
    try {
      await chain(ctx, async () => undefined);
    } catch (err) {
      if (ctx.respond === false || ctx.headerSent) {
        log.warn({ err }, 'MCP request failed after the transport took over');
        return;
      }
      if (err instanceof AppError && err.code !== 'internal') {
        ctx.status = err.status;
        if (err.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(err.retryAfterSeconds));
        ctx.body = errorBody(err);
        return;
      }
      if (isDatabaseUnavailable(err)) {
        // A managed token is looked up in the database: while it is down that is a 503 to retry
        // (as on /api and ingest), not a 500 that reads like a bug.
        log.warn({ err, method: ctx.method }, 'MCP request refused: database unavailable');
        ctx.status = 503;
        ctx.set('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
        ctx.body = { error: { code: 'internal', message: DATABASE_UNAVAILABLE_MESSAGE } };
        return;
      }
      const { error, correlationId } = internalError();
      log.error({ err, correlationId, method: ctx.method }, 'MCP request failed');
      ctx.status = 500;
      ctx.body = errorBody(error);
    }
  };

  return {
    middleware,
    sessionCount: () => sessions.size,
    async closeAll() {
      closing = true;
      clearInterval(sweeper);
      unsubscribeBus();
      await Promise.all([...sessions.values()].map((session) => closeSession(session, 'shutdown')));
    },
  };
}
