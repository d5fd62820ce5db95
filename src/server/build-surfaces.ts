/**
 * The one wiring of switchboard's parts over a database pool: stores, the bus, the sources and
 * background jobs, the services and the surfaces, built in dependency order and torn down in
 * reverse. The product (start-switchboard.ts) and every test harness build through here, the
 * harnesses with overrides (surface-deps.ts), so a change to the wiring is made once.
 */
import { setMaxListeners } from 'node:events';
import type Koa from 'koa';
import type { Logger } from '../log/logger.ts';
import { createApp } from '../http/create-app.ts';
import { isDatabaseUp } from '../store/database/database.ts';
import type { DeliveryRepository } from '../store/outbox/delivery-repository.ts';
import type { PgEventStore } from '../store/events/pg-event-store.ts';
import type { ReplayAttemptRepository } from '../store/records/replay-attempt-repository.ts';
import type { TokenRepository } from '../store/records/token-repository.ts';
import { PostgresEventBus } from '../bus/postgres-event-bus.ts';
import { createProviderDirectory } from '../provider-directory/provider-directory.ts';
import type { RateLimiter } from '../auth/rate-limiter.ts';
import type { ReplayService } from '../replay/replay-types.ts';
import type { Outbound } from '../outbound/deliver-event.ts';
import type { SelfAddress } from '../outbound/target-policy/self-loop.ts';
import type { McpSurface } from '../mcp/create-mcp-surface.ts';
import { createUiSurface } from '../ui/create-ui-surface.ts';
import { createMetrics, type Metrics } from '../metrics/metrics.ts';
import { metricsRoute, observePool } from '../metrics/metrics-route.ts';
import { countStreams } from '../metrics/instrument.ts';
import { printArrivals } from '../terminal/serve-lines.ts';
import type { Cleanup, SurfaceDeps } from './surface-deps.ts';
import { roleParts } from './server-role.ts';
import { createIngestPressure } from '../store/events/ingest-pressure.ts';
import {
  apiSurface,
  buildAuth,
  buildSending,
  buildStores,
  forwardingControl,
  ingestSurface,
  buildReplies,
  mcpSurface,
  startJobs,
  type Forwarding,
  type Sending,
} from './wiring-parts.ts';

export interface Surfaces {
  /** The Koa app: shared middleware, then every surface in order. */
  app: Koa;
  metrics: Metrics;
  store: PgEventStore;
  deliveries: DeliveryRepository;
  tokens: TokenRepository;
  replayAttempts: ReplayAttemptRepository;
  bus: PostgresEventBus;
  limiter: RateLimiter;
  replay: ReplayService;
  outbound: Outbound;
  mcp: McpSurface;
  /**
   * Once the server listens: records its address (replay and forwarding refuse to send to it),
   * checks the forward rules' targets (a config error when one is refused) and starts forwarding.
   */
  listening(self: SelfAddress): Promise<void>;
  /** Ends every open event stream and MCP session: they never end on their own. */
  endStreams(): Promise<void>;
  /** Stops forwarding (attempts in flight get up to drainMs); safe to call again. */
  stopForwarding(drainMs: number): Promise<void>;
  /** Stops everything built here, in reverse order; the pool stays open (it is the caller's). */
  close(drainMs: number): Promise<void>;
}

/** Builds in dependency order; on a failure, what was built is torn down before the error goes up. */
export async function buildSurfaces(deps: SurfaceDeps): Promise<Surfaces> {
  const cleanups: Cleanup[] = [];
  const closeAll = async (logger: Logger): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      await cleanup().catch((err: unknown) => logger.warn({ err }, 'error during shutdown'));
    }
  };
  try {
    return await assemble(deps, cleanups, closeAll);
  } catch (err) {
    await closeAll(deps.logger);
    throw err;
  }
}

/** The wiring in dependency order, one step a line into wiring-parts.ts, read top to bottom. */
async function assemble(
  deps: SurfaceDeps,
  cleanups: Cleanup[],
  closeAll: (logger: Logger) => Promise<void>,
): Promise<Surfaces> {
  const { config, logger, pool } = deps;
  const metrics = deps.metrics ?? createMetrics();
  const overrides = deps.overrides ?? {};
  const stores = buildStores(deps, cleanups);
  const served = overrides.store ?? stores.store;

  const bus = new PostgresEventBus({ databaseUrl: deps.databaseUrl, logger });
  cleanups.push(() => bus.close());
  await bus.ready();

  // Ingest's group commits tell the search indexer when webhooks are arriving faster than they commit.
  const pressure = createIngestPressure();
  const directory = createProviderDirectory(config.providers, startJobs(deps, served, cleanups, pressure));
  const auth = buildAuth(deps, stores.tokens, metrics, cleanups);
  const sending = buildSending(deps, { ...stores, store: served }, auth.limiter, metrics, cleanups);
  const forwarding = forwardingControl(deps, stores.deliveries, sending.outbound, bus, metrics);
  const mcp = mcpSurface(deps, { store: served, providers: directory, replay: sending.replay, bus, auth });
  const streams = streamEnds();
  // A worker serves only /healthz and /metrics: nothing reaches it from senders or users.
  const runs = roleParts(config.server.role);
  const replies = buildReplies(deps, { ...stores, store: served, outbound: sending.outbound }, metrics, cleanups);
  const requestSurfaces = runs.ingest
    ? [
        ingestSurface(deps, served, metrics, pressure, replies),
        mcp.middleware,
        countStreams(metrics),
        apiSurface(deps, {
          stores: { ...stores, store: served },
          providers: directory,
          replay: sending.replay,
          bus,
          auth,
          forward: forwarding.control,
          signal: streams.signal,
          listenReplies: replies.listen,
        }),
      ]
    : [];
  const app = createApp({
    logger,
    isDatabaseUp: overrides.isDatabaseUp ?? (() => isDatabaseUp(pool)),
    role: config.server.role,
    trustProxy: config.server.trustProxy,
    surfaces: [
      ...(overrides.surfacesFirst?.(auth) ?? []),
      ...requestSurfaces,
      metricsRoute({ metrics, authenticate: config.metrics.requireAuth ? auth.authenticate : undefined }),
      ...(runs.ingest ? [createUiSurface({ distDir: deps.uiDistDir })] : []),
    ],
  });
  // Where webhooks and queue messages come in, the terminal shows each one once it is stored.
  if (deps.terminal !== undefined && runs.ingest) {
    const stopPrinting = printArrivals({ terminal: deps.terminal, bus, store: stores.store, logger });
    cleanups.push(() => Promise.resolve(stopPrinting()));
  }
  const stopObserving = observePool(metrics, pool, () => mcp.sessionCount());
  cleanups.push(() => Promise.resolve(stopObserving()));

  return {
    app,
    metrics,
    ...stores,
    bus,
    limiter: auth.limiter,
    replay: sending.replay,
    outbound: sending.outbound,
    mcp,
    ...lifecycle({ sending, forwarding, streams, mcp }, () => closeAll(logger)),
  };
}

/** The one signal that ends every open /api/stream at shutdown. */
function streamEnds(): AbortController {
  const streams = new AbortController();
  // Each open /api/stream listens on this one signal until it closes; their number is bounded per
  // token by api.max_streams_per_caller and by the tokens that exist, not by Node's default of ten.
  setMaxListeners(0, streams.signal);
  return streams;
}

type Lifecycle = Pick<Surfaces, 'listening' | 'endStreams' | 'stopForwarding' | 'close'>;

/** What runs once the server listens, and the ends: of the streams, of forwarding, of everything. */
function lifecycle(
  parts: { sending: Sending; forwarding: Forwarding; streams: AbortController; mcp: McpSurface },
  closeAll: () => Promise<void>,
): Lifecycle {
  const { sending, forwarding, streams, mcp } = parts;
  return {
    listening: async (self) => {
      sending.setSelf(self);
      await forwarding.start(self);
    },
    endStreams: async () => {
      streams.abort();
      await mcp.closeAll();
    },
    stopForwarding: (drainMs) => forwarding.stop(drainMs),
    close: async (drainMs) => {
      // Forwarding first: attempts in flight finish or are released before the sending path, the
      // bus and the database go.
      await forwarding.stop(drainMs);
      await closeAll();
    },
  };
}
