/**
 * /mcp: routing around the switchboard MCP server. Koa does the HTTP part (host check, auth, the
 * body: mcp-body.ts); the session table (mcp-sessions.ts) hands the raw request and response to
 * the SDK transport with the body already parsed. The protocol itself (create-mcp-server.ts, the
 * tools and the resource) knows nothing of HTTP.
 */
import { readFileSync } from 'node:fs';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Context, Middleware } from 'koa';
import compose from 'koa-compose';
import { callerFrom } from '../auth/require-bearer.ts';
import type { Caller } from '../auth/token-service.ts';
import { methodNotAllowed, notFound } from '../errors/app-error.ts';
import { clientGoneCode } from '../http/create-app.ts';
import { sendError } from '../http/error-response.ts';
import type { Logger } from '../log/logger.ts';
import type { ProviderDirectory } from '../provider-directory/provider-directory.ts';
import type { ReplayService } from '../replay/replay-types.ts';
import type { EventStore } from '../store/events/event-store.ts';
import { MCP_SECURITY_HEADERS, jsonRpcError } from './http-responses.ts';
import { MCP_MAX_BODY_BYTES, readMcpBody } from './mcp-body.ts';
import { createEventWaits } from './event-waits.ts';
import { McpSessions, type McpSessionsOptions } from './mcp-sessions.ts';
import { oauthRefusals } from './oauth-refusals.ts';
import { createSwitchboardTools, type SwitchboardToolsDeps } from './switchboard-tools.ts';
import { isUnder, MCP_PATH } from '../shared/route-prefixes.ts';

const MCP_METHODS = ['GET', 'POST', 'DELETE'];

export interface McpSurfaceDeps
  extends
    Pick<McpSessionsOptions, 'bus' | 'notifyIntervalMs' | 'keepAliveMs' | 'cliCommand'>,
    Pick<SwitchboardToolsDeps, 'replayDefaultTarget' | 'replayRate'> {
  store: Pick<EventStore, 'get' | 'listWithSummaries' | 'providerHasEvents'>;
  providers: ProviderDirectory;
  /** The shared replay path; it charges the caller's replay bucket itself. */
  replay: ReplayService;
  /** Takes one token from the caller's read bucket; throws AppError rate_limited when it is empty. */
  checkReadLimit: (caller: string) => void;
  /** createHostCheck(...): runs first, before authentication. */
  checkHost: Middleware;
  /** requireBearer(tokenService). */
  authenticate: Middleware;
  logger: Logger;
  /** ResolvedConfig.mcp. */
  sessions: McpSessionsOptions['limits'] & { maxWaitsPerCaller: number };
  /** Reported as serverInfo.version; default package.json's. */
  version?: string;
  /** Default 1 MiB. */
  maxBodyBytes?: number;
}

export interface McpSurface {
  /** Koa middleware serving /mcp (and refusing /mcp/* and OAuth's endpoints); everything else goes to next(). */
  middleware: Middleware;
  /** Ends every session (open SSE streams close); new sessions are refused from then on. */
  closeAll(): Promise<void>;
  sessionCount(): number;
  /** list_webhook_events calls waiting (wait_ms) now, for one token name or all. */
  waitingCalls(caller?: string): number;
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}

const isInitialize = (body: unknown): boolean =>
  Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body);

const missingSessionId = (ctx: Context): void =>
  jsonRpcError(ctx, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');

/** The /mcp routes (POST, GET, DELETE and the OAuth refusals) over the sessions and limits they share. */
export function createMcpSurface(deps: McpSurfaceDeps): McpSurface {
  const log = deps.logger.child({ component: 'mcp' });
  const maxBodyBytes = deps.maxBodyBytes ?? MCP_MAX_BODY_BYTES;
  const waits = createEventWaits({ bus: deps.bus, maxWaitsPerCaller: deps.sessions.maxWaitsPerCaller });
  const sessions = new McpSessions({
    server: {
      tools: createSwitchboardTools({ ...deps, waits, logger: log }),
      resource: { store: deps.store, checkReadLimit: deps.checkReadLimit, logger: log },
      version: deps.version ?? packageVersion(),
    },
    limits: deps.sessions,
    bus: deps.bus,
    checkReadLimit: deps.checkReadLimit,
    log,
    notifyIntervalMs: deps.notifyIntervalMs,
    keepAliveMs: deps.keepAliveMs,
    cliCommand: deps.cliCommand,
  });

  const handlePost = async (ctx: Context, caller: Caller): Promise<void> => {
    const read = await readMcpBody(ctx, maxBodyBytes);
    if (!read.ok) return;
    const sessionId = ctx.get('mcp-session-id');
    if (sessionId !== '') return sessions.forward(ctx, caller, sessionId, read.body);
    if (!isInitialize(read.body)) return missingSessionId(ctx);
    return sessions.open(ctx, caller, read.body);
  };

  const route: Middleware = async (ctx) => {
    if (ctx.path !== MCP_PATH) {
      sendError(ctx, notFound(`no route for ${ctx.method} ${ctx.path}`));
      return;
    }
    const caller = callerFrom(ctx);
    if (ctx.method === 'POST') return handlePost(ctx, caller);
    if (ctx.method === 'GET' || ctx.method === 'DELETE') {
      const sessionId = ctx.get('mcp-session-id');
      if (sessionId === '') return missingSessionId(ctx);
      return sessions.forward(ctx, caller, sessionId, undefined);
    }
    sendError(ctx, methodNotAllowed(ctx.method, MCP_PATH, MCP_METHODS));
  };

  const chain = compose([deps.checkHost, deps.authenticate, route]);
  // Where OAuth clients go after a 401: answered in OAuth's own error format, saying what to send.
  const refuseOAuth = oauthRefusals(deps.checkHost, deps.authenticate, deps.cliCommand);

  const middleware: Middleware = async (ctx, next) => {
    if (!isUnder(ctx.path, MCP_PATH)) {
      await refuseOAuth(ctx, next);
      return;
    }
    ctx.set(MCP_SECURITY_HEADERS as Record<string, string>);
    ctx.set('Cache-Control', 'no-store');
    try {
      await chain(ctx, () => Promise.resolve());
    } catch (err) {
      // Once the transport has the response, there is nothing left to answer with. A client that
      // hung up (a health check that connects and leaves) is no server fault: debug, no stack.
      if (ctx.respond === false || ctx.headerSent) {
        const gone = clientGoneCode(err);
        if (gone !== undefined) log.debug({ code: gone, path: ctx.path }, 'client went away');
        else log.warn({ err }, 'MCP request failed after the transport took over');
        return;
      }
      // The app's error handler answers it, as it does every other surface's: a refused token or
      // host, or a token lookup that found the database down (503 unavailable, to retry).
      throw err;
    }
  };

  return {
    middleware,
    sessionCount: () => sessions.count(),
    waitingCalls: (caller) => waits.waiting(caller),
    async closeAll() {
      // Sessions first: each answers its waiting calls (unavailable) before it closes.
      await sessions.closeAll();
      waits.close();
    },
  };
}
