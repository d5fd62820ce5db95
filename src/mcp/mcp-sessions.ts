/**
 * The session table of /mcp. Each session is its own Server + StreamableHTTPServerTransport pair,
 * so server-initiated notifications (resource updates) have a stream to travel on. Sessions are
 * capped in number, bound to the token that opened them, expired when quiet, evicted when idle and
 * a new one needs the slot, and ended by DELETE, by their transport closing, by their token's
 * revocation, or by closeAll at shutdown. A call still running when its session ends (a
 * list_webhook_events wait) is answered first, with why, before the session closes.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Context } from 'koa';
import { tokenCreateHint, watchCaller } from '../auth/require-bearer.ts';
import type { Caller } from '../auth/token-service.ts';
import type { EventBus } from '../bus/event-bus.ts';
import { AppError, unavailable } from '../errors/app-error.ts';
import type { Logger } from '../log/logger.ts';
import { createCoalescingNotifier, type CoalescingNotifier } from './coalescing-notifier.ts';
import { createMcpServer, type McpServerDeps } from './create-mcp-server.ts';
import { jsonRpcError } from './http-responses.ts';
import { RECENT_EVENTS_URI } from './recent-events-resource.ts';
import { createSessionSlots, type SessionSlots } from './session-eviction.ts';
import { answerRunningCalls, handOver } from './session-requests.ts';

const RESOURCE_NOTIFY_INTERVAL_MS = 250;
const RETRY_AFTER_FULL_SECONDS = 5;
/** Why a session ended, as the calls it was still running are answered. */
const ENDINGS = {
  revoked: (cliCommand?: string) =>
    new AppError(
      'unauthenticated',
      `the bearer token was revoked, which ended this session; ${tokenCreateHint(cliCommand)}`,
    ),
  deleted: () => unavailable('the session was ended (HTTP DELETE) before this call returned; start a new session'),
  shutdown: () => unavailable('switchboard is shutting down; start a new session once it is back'),
  other: () => unavailable('the session ended before this call returned; start a new session'),
} as const;

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
  notifyIntervalMs?: number | undefined;
  /** SSE keep-alive comment interval; default the SDK's (15 s). */
  keepAliveMs?: number | undefined;
  /** How the CLI runs where this server runs, for the revoked-token message; default `switchboard`. */
  cliCommand?: string | undefined;
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
  /** Open GET streams: a client holding one is listening, so its session is never evicted. */
  streams: number;
  /** When the client last sent a request (or one finished): the order of eviction and expiry. */
  lastActive: number;
  /** Ends running calls, with the error they are answered with, when the session ends. */
  readonly ending: AbortController;
  /** One promise per POST in progress, settled when its response has closed. */
  readonly posts: Set<Promise<void>>;
  /** Ends the watch on the caller's token. */
  stopWatching: () => void;
  closed: boolean;
}

/**
 * The table itself: starting, idle expiry, revocation and close change it together. Counting slots
 * (session-eviction.ts) and a request's time in its session (session-requests.ts) are apart.
 */
export class McpSessions {
  readonly #options: McpSessionsOptions;
  readonly #log: Logger;
  readonly #idleMs: number;
  readonly #sessions = new Map<string, Session>();
  readonly #slots: SessionSlots<Session>;
  readonly #sweeper: NodeJS.Timeout;
  readonly #unsubscribeBus: () => void;
  #closing = false;

  constructor(options: McpSessionsOptions) {
    this.#options = options;
    this.#log = options.log;
    this.#idleMs = options.limits.sessionIdleSeconds * 1000;
    this.#slots = createSessionSlots(this.#sessions, options.limits);
    this.#sweeper = setInterval(() => this.#expireIdle(), Math.max(1_000, Math.min(this.#idleMs / 2, 30_000)));
    this.#sweeper.unref();
    this.#unsubscribeBus = options.bus.subscribe(() => {
      for (const session of this.#sessions.values()) if (session.subscribed) session.notifier.trigger();
    });
  }

  /**
   * Starts a session with an initialize request. At a cap, the least recently used idle session
   * (the caller's own at the per-caller cap, anyone's at the overall cap) is closed to make room;
   * throws rate_limited when every session of the caller is in use, answers 503 when every session
   * is in use or the table is closing.
   */
  async open(ctx: Context, caller: Caller, body: unknown): Promise<void> {
    // A session holds memory and a stream; starting one costs a read, like a call does.
    this.#options.checkReadLimit(caller.name);
    if (!this.#closing) this.#expireIdle();
    const admission = this.#closing
      ? 'full'
      : this.#slots.admit(caller.id, (victim, why) => this.#closeSession(victim, why));
    if (admission === 'caller_full') {
      // One caller must not be able to take the slots every other caller needs.
      throw new AppError(
        'rate_limited',
        `this token already holds ${this.#options.limits.maxSessionsPerCaller} MCP sessions (mcp.max_sessions_per_caller), each with a request in progress or a GET stream open; end one (HTTP DELETE) or retry later`,
        { retryAfterSeconds: RETRY_AFTER_FULL_SECONDS },
      );
    }
    if (admission === 'full') {
      ctx.set('Retry-After', String(RETRY_AFTER_FULL_SECONDS));
      const why = this.#closing
        ? 'the server is shutting down'
        : `too many MCP sessions (limit ${this.#options.limits.maxSessions}), each with a request in progress or a GET stream open`;
      jsonRpcError(ctx, 503, -32000, `${why}; end an unused session (HTTP DELETE) or retry later`);
      return;
    }
    this.#slots.reserve(caller.id, 1);
    await Promise.all(admission.evicted);
    await this.#startSession(ctx, caller, body);
  }

  /** Hands a request to the caller's session with that id, or answers 404 Session not found. */
  async forward(ctx: Context, caller: Caller, sessionId: string, body: unknown): Promise<void> {
    const session = this.#sessions.get(sessionId);
    // Another token's session looks exactly like an unknown one: ids are not shared between
    // tokens, not even between a revoked token and a new one given the same name.
    if (session === undefined || session.closed || session.caller.id !== caller.id) {
      jsonRpcError(ctx, 404, -32001, 'Session not found');
      return;
    }
    await handOver(ctx, session, body, now);
  }

  count(): number {
    return this.#sessions.size;
  }

  /** Ends every session (open SSE streams close); new sessions are refused from then on. */
  async closeAll(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#sweeper);
    this.#unsubscribeBus();
    await Promise.all(
      [...this.#sessions.values()].map((session) => this.#closeSession(session, 'shutdown', ENDINGS.shutdown())),
    );
  }

  async #closeSession(session: Session, why: string, ending: AppError = ENDINGS.other()): Promise<void> {
    if (session.closed) return;
    // Out of the table at once (before any await): its slot is free and its id unknown from here.
    session.closed = true;
    session.stopWatching();
    session.notifier.cancel();
    if (this.#sessions.get(session.id) === session) this.#sessions.delete(session.id);
    this.#log.debug({ sessionId: session.id, caller: session.caller.name, why }, 'MCP session ended');
    await answerRunningCalls(session, ending);
    await session.server.close().catch((err: unknown) => this.#log.warn({ err }, 'closing an MCP session failed'));
  }

  #expireIdle(): void {
    const cutoff = now() - this.#idleMs;
    for (const session of [...this.#sessions.values()]) {
      if (session.inflight === 0 && session.lastActive < cutoff) void this.#closeSession(session, 'idle');
    }
  }

  /** Builds the session's server and transport and hands it the initialize request; the slot is reserved. */
  async #startSession(ctx: Context, caller: Caller, body: unknown): Promise<void> {
    let registered = false;
    const session = this.#newSession(ctx, caller, (id) => {
      session.id = id;
      this.#sessions.set(id, session);
      this.#slots.reserve(caller.id, -1);
      registered = true;
      this.#log.debug({ sessionId: id, caller: caller.name }, 'MCP session started');
    });
    await session.server.connect(session.transport);
    // Set after connect, which wraps the transport's callbacks: DELETE, idle expiry and closeAll all end here.
    session.server.onclose = () => void this.#closeSession(session, 'closed');
    try {
      await handOver(ctx, session, body, now);
    } finally {
      if (!registered) {
        this.#slots.reserve(caller.id, -1);
        await this.#closeSession(session, 'initialize failed');
      } else if (this.#closing) {
        // closeAll ran while this session was being set up, so it was not among those it ended.
        await this.#closeSession(session, 'shutdown', ENDINGS.shutdown());
      }
    }
  }

  /** A session's server, transport and notifier, not yet in the table: `registered` puts it there. */
  #newSession(ctx: Context, caller: Caller, registered: (id: string) => void): Session {
    const options = this.#options;
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: registered,
      // Awaited by the transport before it closes on DELETE: running calls are answered first.
      onsessionclosed: () => answerRunningCalls(session, ENDINGS.deleted()),
      ...(options.keepAliveMs === undefined ? {} : { keepAliveMs: options.keepAliveMs }),
    });
    transport.onerror = (err) =>
      this.#log.debug({ err: err.message, caller: caller.name }, 'MCP transport refused a request');
    const ending = new AbortController();
    const server = createMcpServer(options.server, {
      caller: caller.name,
      signal: ending.signal,
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
      ending,
      posts: new Set(),
      // A revoked token's sessions end, GET streams and subscriptions with them.
      stopWatching: watchCaller(
        ctx,
        () => void this.#closeSession(session, 'token revoked', ENDINGS.revoked(options.cliCommand)),
      ),
      closed: false,
      notifier: createCoalescingNotifier(() => {
        server
          .sendResourceUpdated({ uri: RECENT_EVENTS_URI })
          .catch((err: unknown) => this.#log.debug({ err }, 'resource update not delivered'));
      }, options.notifyIntervalMs ?? RESOURCE_NOTIFY_INTERVAL_MS),
    };
    return session;
  }
}

/** The clock of idle expiry and eviction: monotonic, so a wall-clock change expires nothing. */
function now(): number {
  return performance.now();
}
