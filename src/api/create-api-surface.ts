import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import compose from 'koa-compose';
import { validateReplayWebhookEventInput } from '../../generated/validators.js';
import type {
  ApiEventSummary,
  Delivery,
  EventDeliveries,
  ForwardList,
  ForwardRetryDeadResult,
  ForwardRuleStatus,
  ListProvidersOutput,
  ReplayHistory,
  ReplayWebhookEventInput,
} from '../../generated/types.ts';
import { callerFrom, callerOf, watchCaller } from '../auth/require-bearer.ts';
import { ENV_TOKEN_CALLER } from '../auth/token-service.ts';
import type { EventBus } from '../bus/event-bus.ts';
import { AppError, invalidArgument, methodNotAllowed, notFound } from '../errors/app-error.ts';
import { describeSchemaErrors } from '../errors/schema-errors.ts';
import { listEventsWithSummaries } from '../provider-directory/list-events.ts';
import type { ProviderDirectory } from '../provider-directory/provider-directory.ts';
import type { ProviderConfig } from '../config/resolve-config.ts';
import type { ForwardControl } from '../forward/forward-control.ts';
import { replayHeadersOf } from '../replay/replay-headers.ts';
import type { ReplayService } from '../replay/replay-types.ts';
import { normalizeEventId } from '../shared/event-id.ts';
import type { EventStore } from '../store/events/event-store.ts';
import type { ReplayAttemptRepository } from '../store/records/replay-attempt-repository.ts';
import { toApiEventDetail } from '../event-wire/event-detail.ts';
import { createLiveSummaries, lastEventId, serveEventStream, type EventStreamOptions } from './event-stream.ts';
import { parseListQuery } from './list-parameters.ts';
import { addReplyRoutes, replyOffers } from './reply-routes.ts';
import type { ListenReplies } from '../forward/listen-replies.ts';
import { readJsonBody } from './read-json-body.ts';
import { apiInputKeys } from './tool-inputs.ts';
import { rawDownloadHeaders } from './raw-download.ts';
import { API_PREFIX, isUnder } from '../shared/route-prefixes.ts';
import { BIN_NAME } from '../shared/package-names.ts';

/** GET /api/config: what the UI needs to know about the server. Never a secret. */
interface ApiConfig {
  replay: { default_target: string | null };
  /** The caller name replay history records for the server's own SWITCHBOARD_TOKEN. */
  server_token_caller: string;
  /**
   * How to run switchboard's CLI where this server runs (`switchboard`, `npx @switchboard-dev/switchboard`
   * or, in a clone, `npm start --`): the UI's hints and copy buttons start with it.
   */
  cli_command: string;
}

export interface ApiSurfaceDeps {
  store: Pick<EventStore, 'get' | 'listWithSummaries' | 'summaries' | 'providerHasEvents'>;
  replayAttempts: Pick<ReplayAttemptRepository, 'listForEvent'>;
  providers: ProviderDirectory;
  /** The resolved providers: which stored headers a replay copies depends on each one's preset. */
  providerConfigs: readonly ProviderConfig[];
  bus: Pick<EventBus, 'subscribe'>;
  /** The one replay path shared with MCP: it applies the replay rate limit and writes the audit trail. */
  replay: ReplayService;
  /** ResolvedConfig.replay.defaultTarget, shown in the UI's replay field. */
  replayDefaultTarget: string | undefined;
  /** ApiConfig.cli_command; default `switchboard`, the installed package's command. */
  cliCommand?: string;
  /** createHostCheck(...), the one /mcp uses (DNS-rebinding protection); runs before authentication. */
  checkHost: Middleware;
  /** requireBearer(tokenService): 401 with WWW-Authenticate without a valid bearer token, else sets ctx.state.caller. */
  authenticate: Middleware;
  /** rateLimiter.checkRead: takes one token from the caller's read bucket, throws rate_limited when empty. */
  checkReadLimit: (caller: string) => void;
  /** rateLimiter.checkWrite: the same from the write bucket, for the routes that change something. */
  checkWriteLimit: (caller: string) => void;
  /** Stream tuning (tests shorten the heartbeat); signal ends every open stream at shutdown. */
  stream?: Pick<EventStreamOptions, 'heartbeatMs' | 'maxBackfill' | 'maxBufferedBytes' | 'signal'>;
  /** ResolvedConfig.api.maxStreamsPerCaller: open /api/stream connections per token. */
  maxStreamsPerCaller: number;
  /** Forwarding's rules and deliveries; absent, /api/forwards lists no rule and events have no deliveries. */
  forward?: ForwardControl;
  /** `switchboard listen --reply`: offers the deliveries that wait and takes the answers; absent, no stream may ask. */
  listenReplies?: ListenReplies;
}

const REPLAY_BODY_LIMIT = 16 * 1024;
/** replay_webhook_event's inputs but the id, which the path carries. */
const REPLAY_BODY_KEYS = apiInputKeys('replay_webhook_event').filter((key) => key !== 'id');
/** A slot frees when a stream closes, which the client decides; this is when to look again. */
const STREAM_SLOT_RETRY_SECONDS = 5;

/**
 * Open streams per caller (token identity). A slot is taken before anything else about the stream
 * is done and given back when its response closes, however it ends.
 */
function streamSlots(max: number): (ctx: Context) => void {
  const open = new Map<string, number>();
  return (ctx) => {
    const { id } = callerFrom(ctx);
    const count = open.get(id) ?? 0;
    if (count >= max) {
      throw new AppError(
        'rate_limited',
        `this token already has ${max} open event streams (api.max_streams_per_caller); close one or retry later`,
        { retryAfterSeconds: STREAM_SLOT_RETRY_SECONDS },
      );
    }
    open.set(id, count + 1);
    ctx.res.once('close', () => {
      const left = (open.get(id) ?? 1) - 1;
      if (left > 0) open.set(id, left);
      else open.delete(id);
    });
  };
}

function eventId(ctx: { params: Record<string, string | undefined> }): string {
  const id = normalizeEventId(ctx.params['id'] ?? '');
  if (id === null) throw invalidArgument('id: expected an event id (a UUID)');
  return id;
}

function isApiPath(path: string): boolean {
  return isUnder(path, API_PREFIX);
}

/** The events: list, one, its bytes, what a replay would send, replaying it, its replays and deliveries. */
function addEventRoutes(router: Router, deps: ApiSurfaceDeps): void {
  const existing = async (id: string): Promise<ApiEventSummary> => {
    const [summary] = await deps.store.summaries([id]);
    if (!summary) throw notFound(`no event with id ${id}`);
    return summary;
  };

  router.get('/events', async (ctx) => {
    const page = await listEventsWithSummaries(deps, parseListQuery(ctx.query));
    // The list-row mark: one query for the page's events, only when forwarding is configured.
    const states = deps.forward ? await deps.forward.states(page.events) : new Map<string, never>();
    const events = page.events.map((event) => {
      const state = states.get(event.id);
      return state === undefined ? event : { ...event, forward_state: state };
    });
    ctx.body = { ...page, events };
  });

  router.get('/events/:id', async (ctx) => {
    const id = eventId(ctx);
    const stored = await deps.store.get(id);
    if (!stored) throw notFound(`no event with id ${id}`);
    ctx.body = toApiEventDetail(stored);
  });

  router.get('/events/:id/raw', async (ctx) => {
    const id = eventId(ctx);
    const stored = await deps.store.get(id);
    if (!stored) throw notFound(`no event with id ${id}`);
    ctx.set(rawDownloadHeaders(stored.id, stored.contentType));
    ctx.status = 200;
    ctx.body = stored.payload;
  });

  router.get('/events/:id/replay-headers', async (ctx) => {
    const id = eventId(ctx);
    const stored = await deps.store.get(id);
    if (!stored) throw notFound(`no event with id ${id}`);
    const provider = deps.providerConfigs.find((p) => p.name === stored.provider);
    ctx.body = replayHeadersOf(stored, provider, Date.now());
  });

  router.post('/events/:id/replay', async (ctx) => {
    const id = eventId(ctx);
    const body = await readJsonBody(ctx, REPLAY_BODY_LIMIT);
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw invalidArgument('body: expected a JSON object');
    const extra = Object.keys(body).filter((k) => !REPLAY_BODY_KEYS.includes(k));
    if (extra.length > 0) {
      throw invalidArgument(
        `body: unknown field ${extra[0] ?? ''}; only ${REPLAY_BODY_KEYS.join(' and ')} are accepted`,
      );
    }
    const input = { id, ...(body as Partial<Record<keyof ReplayWebhookEventInput, unknown>>) };
    if (!validateReplayWebhookEventInput(input)) {
      throw invalidArgument(describeSchemaErrors(validateReplayWebhookEventInput.errors, 'body'));
    }
    ctx.body = await deps.replay.replay({
      eventId: id,
      targetUrl: input.target_url,
      caller: callerOf(ctx),
      unsigned: input.unsigned === true,
    });
  });

  router.get('/events/:id/replays', async (ctx) => {
    const id = eventId(ctx);
    await existing(id);
    const history: ReplayHistory = { attempts: await deps.replayAttempts.listForEvent(id) };
    ctx.body = history;
  });

  router.get('/events/:id/deliveries', async (ctx) => {
    const id = eventId(ctx);
    await existing(id);
    const body: EventDeliveries = { event_id: id, deliveries: deps.forward ? await deps.forward.deliveriesOf(id) : [] };
    ctx.body = body;
  });
}

/** Forwarding's rules and deliveries; each change spends the caller's write bucket. */
function addForwardRoutes(router: Router, deps: ApiSurfaceDeps): void {
  router.post('/deliveries/:id/retry', async (ctx) => {
    deps.checkWriteLimit(callerOf(ctx));
    const id = normalizeEventId(ctx.params['id'] ?? '');
    if (id === null) throw invalidArgument('id: expected a delivery id (a UUID)');
    if (!deps.forward) throw notFound(`no delivery with id ${id}`);
    const body: Delivery = await deps.forward.retry(id);
    ctx.body = body;
  });

  router.get('/forwards', async (ctx) => {
    const body: ForwardList = deps.forward ? await deps.forward.list() : { rules: [] };
    ctx.body = body;
  });

  const forwardRule = (ctx: {
    params: Record<string, string | undefined>;
  }): { control: ForwardControl; name: string } => {
    const name = ctx.params['name'] ?? '';
    if (!deps.forward) throw notFound(`no forward rule named ${name}`);
    return { control: deps.forward, name };
  };

  router.post('/forwards/:name/retry-dead', async (ctx) => {
    deps.checkWriteLimit(callerOf(ctx));
    const { control, name } = forwardRule(ctx);
    const body: ForwardRetryDeadResult = await control.retryDead(name);
    ctx.body = body;
  });

  for (const [action, paused] of [
    ['pause', true],
    ['resume', false],
  ] as const) {
    router.post(`/forwards/:name/${action}`, async (ctx) => {
      deps.checkWriteLimit(callerOf(ctx));
      const { control, name } = forwardRule(ctx);
      const body: ForwardRuleStatus = await control.setPaused(name, paused);
      ctx.body = body;
    });
  }
}

/** The providers and the settings the UI reads. */
function addProviderRoutes(router: Router, deps: ApiSurfaceDeps): void {
  router.get('/providers', (ctx) => {
    const body: ListProvidersOutput = {
      providers: deps.providers.list(),
      replay_default_target: deps.replayDefaultTarget ?? null,
    };
    ctx.body = body;
  });

  router.get('/providers/:name', (ctx) => {
    const name = ctx.params['name'] ?? '';
    const detail = deps.providers.detail(name);
    if (detail === undefined) throw notFound(`no provider named ${name}`);
    ctx.body = detail;
  });

  router.get('/config', (ctx) => {
    const config: ApiConfig = {
      replay: { default_target: deps.replayDefaultTarget ?? null },
      server_token_caller: ENV_TOKEN_CALLER,
      cli_command: deps.cliCommand ?? BIN_NAME,
    };
    ctx.body = config;
  });
}

/** The live stream: a slot per caller, a backfill from Last-Event-ID, then new events. */
function addStreamRoute(router: Router, deps: ApiSurfaceDeps): void {
  const live = createLiveSummaries({ store: deps.store, bus: deps.bus });
  const takeStreamSlot = streamSlots(deps.maxStreamsPerCaller);
  router.get('/stream', async (ctx) => {
    const offerReplies = replyOffers(ctx, deps.listenReplies);
    takeStreamSlot(ctx);
    await serveEventStream(
      ctx,
      {
        store: deps.store,
        live,
        untilRevoked: (onRevoked) => watchCaller(ctx, onRevoked),
        ...(offerReplies === undefined ? {} : { offerReplies }),
        ...deps.stream,
      },
      lastEventId(ctx),
    );
  });
}

function buildRouter(deps: ApiSurfaceDeps): Router {
  const router = new Router({ prefix: API_PREFIX });
  addEventRoutes(router, deps);
  addForwardRoutes(router, deps);
  addProviderRoutes(router, deps);
  addStreamRoute(router, deps);
  addReplyRoutes(router, deps);
  return router;
}

/**
 * The HTTP JSON API under /api, serving the same shapes as the MCP tools from the same store and
 * schemas. Every path under /api (unknown ones included) is host-checked and authenticated
 * before anything else, so nothing about the API leaks to an unauthenticated caller, not even
 * which routes exist.
 */
export function createApiSurface(deps: ApiSurfaceDeps): Middleware {
  const router = buildRouter(deps);
  // Router middleware is typed for a router-enhanced context; Koa hands it the same object.
  const routes: Middleware = router.routes() as Middleware;
  const methods: Middleware = router.allowedMethods() as Middleware;

  const rateLimit: Middleware = async (ctx, next) => {
    // A POST changes something and spends its own bucket in its route: the write bucket, or for
    // a replay the replay bucket inside the ReplayService, as MCP's do.
    if (ctx.method !== 'POST') deps.checkReadLimit(callerOf(ctx));
    await next();
  };

  const respond: Middleware = async (ctx) => {
    await routes(ctx, () => Promise.resolve());
    await methods(ctx, () => Promise.resolve());
    if (ctx.status === 405) {
      // allowedMethods set the Allow header already.
      throw methodNotAllowed(ctx.method, ctx.path, (ctx.response.get('Allow') || '').split(/,\s*/));
    } else if (ctx.status === 404 && (ctx.body === undefined || ctx.body === null)) {
      // Every route sets a body or throws, so an empty 404 means no route matched.
      throw notFound(`no route for ${ctx.method} ${ctx.path}`);
    }
  };

  // A database outage anywhere in here, token lookups included, reaches the app's error handler,
  // which answers it 503 with Retry-After.
  const chain = compose([deps.checkHost, deps.authenticate, rateLimit, respond]);

  return async (ctx, next) => {
    if (!isApiPath(ctx.path)) {
      await next();
      return;
    }
    // Everything here is per-caller data: no shared cache may keep it.
    ctx.set('Cache-Control', 'no-store');
    await chain(ctx, () => Promise.resolve());
  };
}
