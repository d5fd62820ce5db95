import { inspect } from 'node:util';
import type { ConnectionState } from '../../generated/constants.ts';
import pg from 'pg';
import type { Logger } from '../log/logger.ts';
import { backoffDelayMs } from '../shared/backoff.ts';
import { ANNOUNCE_CHANNEL, announcedIds } from '../store/events/announcement.ts';
import type { EventBus, EventBusListener } from './event-bus.ts';

/** The listening connection's state, in the words list_providers uses for a queue's. */
type BusConnectionState = ConnectionState;

export interface PostgresEventBusOptions {
  databaseUrl: string;
  logger: Logger;
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

/**
 * The live bus over PostgreSQL LISTEN/NOTIFY, so every instance sharing the database hears about
 * every committed event, its own included: local subscribers are served by the same notification
 * path as remote ones, which keeps one ordering and one behaviour. The store's insert sends the
 * notifications (store/events/announcement.ts); the bus only listens.
 *
 * LISTEN needs one long-lived session, which a pool cannot promise, so it gets its own pg.Client,
 * re-established with exponential backoff whenever it drops.
 *
 * Notifications sent while the listener is down are not replayed: the bus is a "something new
 * arrived" signal, and consumers that must not miss anything read the store.
 * Over 80 lines: one closure over the LISTEN connection, its reconnect backoff and the subscribers
 * that every callback shares.
 */
export function createPostgresEventBus(options: PostgresEventBusOptions): PostgresEventBus {
  const channel = ANNOUNCE_CHANNEL;
  const logger = options.logger.child({ component: 'event-bus', channel });
  const minDelay = options.reconnectMinMs ?? 250;
  const maxDelay = options.reconnectMaxMs ?? 30_000;
  const heartbeatMs = options.heartbeatMs ?? 30_000;

  const listeners = new Set<EventBusListener>();

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
    const ids = announcedIds(payload);
    if (ids.length === 0) return;
    for (const listener of [...listeners]) {
      try {
        listener(ids);
      } catch (err: unknown) {
        logger.error({ err }, 'event bus listener failed');
      }
    }
  };

  /** Drops the LISTEN connection; resolves once it has ended. */
  const teardown = async (): Promise<void> => {
    if (heartbeatTimer !== undefined) clearInterval(heartbeatTimer);
    heartbeatTimer = undefined;
    const old = client;
    client = undefined;
    if (old !== undefined) {
      old.removeAllListeners('notification');
      await old.end().catch(() => undefined);
    }
  };

  const scheduleReconnect = (reason: unknown): void => {
    if (closed || reconnectTimer !== undefined) return;
    void teardown();
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
      listeners.clear();
      await teardown();
    },
  };
}

/**
 * What a lost connection's log line needs: the message and the SQLSTATE or errno. Not the error
 * itself: pg-pool hangs the whole client on it (err.client: connection parameters, the backend's
 * cancel key, socket state), kilobytes per line, and a stack through pg internals says nothing an
 * operator can act on.
 * @internal outside src/, only tests or benches use it
 */
export function connectionFailure(err: unknown): { message: string; code?: string } {
  if (typeof err !== 'object' || err === null) return { message: String(err) };
  const { message, code } = err as { message?: unknown; code?: unknown };
  return {
    message: (typeof message === 'string' ? message : inspect(err, { breakLength: Infinity })).slice(0, 300),
    ...(typeof code === 'string' ? { code } : {}),
  };
}
