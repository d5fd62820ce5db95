/** What buildSurfaces is given: the product passes the first group, test harnesses add overrides. */
import type { Middleware } from 'koa';
import type { DatabasePool } from 'slonik';
import type { ResolvedConfig } from '../config/resolve-config.ts';
import type { Logger } from '../log/logger.ts';
import type { EventStore } from '../store/events/event-store.ts';
import type { QueueConnectionState } from '../provider-directory/provider-directory.ts';
import type { OutboundOptions } from '../outbound/deliver-event.ts';
import type { IngestSurfaceOptions } from '../ingest/ingest-surface.ts';
import type { McpSurfaceDeps } from '../mcp/create-mcp-surface.ts';
import type { ApiSurfaceDeps } from '../api/create-api-surface.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { ServeTerminal } from '../terminal/serve-lines.ts';

export interface SurfaceDeps {
  config: ResolvedConfig;
  logger: Logger;
  /** The pool every store and repository uses. */
  pool: DatabasePool;
  /** Where the bus opens its own LISTEN connection. */
  databaseUrl: string;
  /** The address the server binds; the host check accepts it as a Host header. */
  bindHost: string;
  /** SWITCHBOARD_TOKEN. */
  envToken: string | undefined;
  redisUrl: string | undefined;
  /** Share one metrics registry (tests); default a new one. */
  metrics?: Metrics;
  /** Where the built UI is; default the package's own (browser tests build a fresh one). */
  uiDistDir?: string;
  /** How the CLI is run where this server runs, for the UI's hints (cli/invocation.ts decides). */
  cliCommand?: string;
  /** `serve` on a terminal without --quiet: a line per event stored and per forward attempt. */
  terminal?: ServeTerminal;
  /** Test seams: the product passes none. */
  overrides?: SurfaceOverrides;
}

/** What a test harness changes about the wiring; each is named for what it replaces. */
interface SurfaceOverrides {
  /** The store every surface and the replay service use (one that fails, or drifts from the schema). */
  store?: EventStore;
  /**
   * Runs no background job of its own (queue consumers, retention, search indexing): a harness's
   * database and Redis channels are the test's to drive. Queue providers report this state.
   */
  withoutJobs?: { queueConnection: QueueConnectionState };
  ingest?: Pick<IngestSurfaceOptions, 'now' | 'groupCommit' | 'commitTimeoutMs'>;
  /** /api/stream tuning (a short heartbeat, a small backfill). */
  stream?: Pick<NonNullable<ApiSurfaceDeps['stream']>, 'heartbeatMs' | 'maxBackfill' | 'maxBufferedBytes'>;
  mcp?: Pick<McpSurfaceDeps, 'notifyIntervalMs' | 'keepAliveMs'>;
  /** Watch the sending path's DNS lookups and connections. */
  outbound?: Pick<OutboundOptions, 'resolver' | 'onConnect'>;
  /** Surfaces tried before all others (tests of authentication on a route of their own). */
  surfacesFirst?: (auth: { authenticate: Middleware; checkHost: Middleware }) => Middleware[];
  /** /healthz's database probe. */
  isDatabaseUp?: () => Promise<boolean>;
}

/** A teardown step; buildSurfaces runs them in reverse order of registration. */
export type Cleanup = () => Promise<void>;
