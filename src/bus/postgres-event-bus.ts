import { inspect } from 'node:util';
import type { ConnectionState } from '../../generated/constants.ts';
import pg from 'pg';
import type { Logger } from '../log/logger.ts';
import { backoffDelayMs } from '../shared/backoff.ts';
import { isEventId } from '../store/event-id.ts';
import type { EventBus, EventBusListener } from './event-bus.ts';

export const DEFAULT_BUS_CHANNEL = 'switchboard_events';

/** PostgreSQL refuses NOTIFY payloads of 8000 bytes or more. */
export const MAX_NOTIFY_PAYLOAD_BYTES = 7999;

/** The listening connection's state, in the words list_providers uses for a queue's. */
export type BusConnectionState = ConnectionState;

export interface PostgresEventBusOptions {
  databaseUrl: string;
  logger: Logger;
  /** A plain lower-case identifier, so it can be LISTENed to without quoting tricks. */
  channel?: string;
  /** First reconnect delay; doubles on every failure up to reconnectMaxMs. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** How often the LISTEN connection is probed, so a silently dead connection is noticed. */
  heartbeatMs?: number;
}

export interface PostgresEventBus extends EventBus {
  readonly state: BusConnectionState;
  /** Resolves once LISTEN is in place (the first time), so nothing published afterwards is missed. */
  ready(): Promise<void>;
}

const CHANNEL_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The live bus over PostgreSQL LISTEN/NOTIFY, so every instance sharing the database hears about
 * every committed event, its own included: local subscribers are served by the same notification
 * path as remote ones, which keeps one ordering and one behaviour.
 *
 * LISTEN needs one long-lived session, which a pool cannot promise, so it gets its own pg.Client,
 * re-established with exponential backoff whenever it drops. NOTIFY goes through a small separate
 * pool so publishing works even while the listener is reconnecting.
 *
 * Notifications sent while the listener is down are not replayed: the bus is a "something new
 * arrived" signal, and consumers that must not miss anything read the store.
 */
export function createPostgresEventBus(options: PostgresEventBusOptions): PostgresEventBus {
  const channel = options.channel ?? DEFAULT_BUS_CHANNEL;
  if (!CHANNEL_NAME.test(channel)) throw new Error(`bus channel "${channel}" must be a lower-case identifier`);
  const logger = options.logger.child({ component: 'event-bus', channel });
  const minDelay = options.reconnectMinMs ?? 250;
  const maxDelay = options.reconnectMaxMs ?? 30_000;
  const heartbeatMs = options.heartbeatMs ?? 30_000;

  const listeners = new Set<EventBusListener>();
  const publishPool = new pg.Pool({
    connectionString: options.databaseUrl,
    max: 2,
    idleTimeoutMillis: 30_000,
    application_name: 'switchboard-event-bus-publish',
  });
  // An idle pooled client that loses its server emits here; unhandled, it would crash the process.
  publishPool.on('error', (err) =>
    logger.warn({ reason: connectionFailure(err) }, 'event bus publish connection lost'),
  );

  let state: BusConnectionState = 'connecting';
  let closed = false;
  let client: pg.Client | undefined;
  let attempt = 0;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let heartbeatTimer: NodeJS.Timeout | undefined;
  let everConnected = false;
  let resolveReady: () => void = () => undefined;
  const readyPromise = new Promise<void>((resolve) => {
    resolveReady = resolve;
  });

  const dispatch = (payload: string | undefined): void => {
    if (payload === undefined || payload === '') return;
    const ids = payload.split(',').filter(isEventId);
    if (ids.length === 0) return;
    for (const listener of [...listeners]) {
      try {
        listener(ids);
      } catch (err: unknown) {
        logger.error({ err }, 'event bus listener failed');
      }
    }
  };

  const teardown = (): void => {
    if (heartbeatTimer !== undefined) clearInterval(heartbeatTimer);
    heartbeatTimer = undefined;
    const old = client;
    client = undefined;
    if (old !== undefined) {
      old.removeAllListeners('notification');
      old.end().catch(() => undefined);
    }
  };

  const scheduleReconnect = (reason: unknown): void => {
    if (closed || reconnectTimer !== undefined) return;
    teardown();
    state = 'connecting';
    const jittered = backoffDelayMs({ initialMs: minDelay, maxMs: maxDelay, jitter: 'half' }, attempt + 1);
    attempt += 1;
    logger.warn(
      { reason: connectionFailure(reason), attempt, delayMs: jittered },
      'event bus LISTEN connection lost; reconnecting',
    );
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      void connect();
    }, jittered);
  };

  const connect = async (): Promise<void> => {
    if (closed) return;
    state = 'connecting';
    const next = new pg.Client({
      connectionString: options.databaseUrl,
      keepAlive: true,
      query_timeout: 10_000,
      application_name: 'switchboard-event-bus',
    });
    client = next;
    next.on('error', (err) => {
      if (client === next) scheduleReconnect(err);
    });
    next.on('end', () => {
      if (client === next && !closed) scheduleReconnect(new Error('connection ended'));
    });
    next.on('notification', (message) => {
      if (message.channel === channel) dispatch(message.payload);
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${channel}`);
    } catch (err: unknown) {
      if (client === next) scheduleReconnect(err);
      else next.end().catch(() => undefined);
      return;
    }
    if (closed || client !== next) {
      next.end().catch(() => undefined);
      return;
    }
    if (everConnected) logger.info({ attempts: attempt }, 'event bus LISTEN connection re-established');
    everConnected = true;
    attempt = 0;
    state = 'connected';
    heartbeatTimer = setInterval(() => {
      next.query('SELECT 1').catch((err: unknown) => {
        if (client === next) scheduleReconnect(err);
      });
    }, heartbeatMs);
    heartbeatTimer.unref();
    resolveReady();
  };

  void connect();

  return {
    get state() {
      return state;
    },
    ready: () => readyPromise,
    async publish(eventIds) {
      if (closed) throw new Error('event bus is closed');
      const payloads = chunkIds(eventIds);
      if (payloads.length === 0) return;
      // One round trip however many chunks: each row of the unnest is one NOTIFY.
      await publishPool.query('SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload', [channel, payloads]);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      state = 'disconnected';
      if (reconnectTimer !== undefined) clearTimeout(reconnectTimer);
      reconnectTimer = undefined;
      teardown();
      listeners.clear();
      await publishPool.end();
    },
  };
}

/**
 * What a lost connection's log line needs: the message and the SQLSTATE or errno. Not the error
 * itself: pg-pool hangs the whole client on it (err.client: connection parameters, the backend's
 * cancel key, socket state), kilobytes per line, and a stack through pg internals says nothing an
 * operator can act on.
 */
export function connectionFailure(err: unknown): { message: string; code?: string } {
  if (typeof err !== 'object' || err === null) return { message: String(err) };
  const { message, code } = err as { message?: unknown; code?: unknown };
  return {
    message: (typeof message === 'string' ? message : inspect(err, { breakLength: Infinity })).slice(0, 300),
    ...(typeof code === 'string' ? { code } : {}),
  };
}

/**
 * Comma-joined ids, as few payloads as fit under PostgreSQL's NOTIFY limit. Ids are ASCII, so
 * string length is byte length; an id that could not fit alone (never, for UUIDs) is dropped
 * rather than failing the whole publish.
 */
export function chunkIds(eventIds: readonly string[], maxBytes: number = MAX_NOTIFY_PAYLOAD_BYTES): string[] {
  const payloads: string[] = [];
  let current: string[] = [];
  let bytes = 0;
  for (const id of eventIds) {
    const size = Buffer.byteLength(id);
    if (size === 0 || id.includes(',') || size > maxBytes) continue;
    const added = current.length === 0 ? size : size + 1;
    if (bytes + added > maxBytes) {
      payloads.push(current.join(','));
      current = [id];
      bytes = size;
    } else {
      current.push(id);
      bytes += added;
    }
  }
  if (current.length > 0) payloads.push(current.join(','));
  return payloads;
}
