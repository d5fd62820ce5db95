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
 */
export class PostgresEventBus implements EventBus {
  readonly #options: PostgresEventBusOptions;
  readonly #logger: Logger;
  readonly #listeners = new Set<EventBusListener>();
  readonly #ready: Promise<void>;
  #resolveReady: () => void = () => undefined;
  #state: BusConnectionState = 'connecting';
  #closed = false;
  /** The current LISTEN connection; a callback of a replaced one finds it is not this and stays quiet. */
  #client: pg.Client | undefined;
  /** Failed connects since the last success: the backoff's exponent. */
  #attempt = 0;
  #everConnected = false;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #heartbeatTimer: NodeJS.Timeout | undefined;

  constructor(options: PostgresEventBusOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: 'event-bus', channel: ANNOUNCE_CHANNEL });
    this.#ready = new Promise<void>((resolve) => {
      this.#resolveReady = resolve;
    });
    void this.#connect();
  }

  get state(): BusConnectionState {
    return this.#state;
  }

  /** Resolves once LISTEN is in place (the first time), so nothing published afterwards is missed. */
  ready(): Promise<void> {
    return this.#ready;
  }

  subscribe(listener: EventBusListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#state = 'disconnected';
    if (this.#reconnectTimer !== undefined) clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = undefined;
    this.#listeners.clear();
    await this.#teardown();
  }

  #dispatch(payload: string | undefined): void {
    const ids = announcedIds(payload);
    if (ids.length === 0) return;
    for (const listener of [...this.#listeners]) {
      try {
        listener(ids);
      } catch (err: unknown) {
        this.#logger.error({ err }, 'event bus listener failed');
      }
    }
  }

  /** Drops the LISTEN connection; resolves once it has ended. */
  async #teardown(): Promise<void> {
    if (this.#heartbeatTimer !== undefined) clearInterval(this.#heartbeatTimer);
    this.#heartbeatTimer = undefined;
    const old = this.#client;
    this.#client = undefined;
    if (old !== undefined) {
      old.removeAllListeners('notification');
      await old.end().catch(() => undefined);
    }
  }

  #scheduleReconnect(reason: unknown): void {
    if (this.#closed || this.#reconnectTimer !== undefined) return;
    void this.#teardown();
    this.#state = 'connecting';
    this.#attempt += 1;
    const delayMs = backoffDelayMs(
      {
        initialMs: this.#options.reconnectMinMs ?? 250,
        maxMs: this.#options.reconnectMaxMs ?? 30_000,
        jitter: 'half',
      },
      this.#attempt,
    );
    this.#logger.warn(
      { reason: connectionFailure(reason), attempt: this.#attempt, delayMs },
      'event bus LISTEN connection lost; reconnecting',
    );
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      void this.#connect();
    }, delayMs);
  }

  /** A new client whose failures reconnect only while it is still the current one. */
  #newClient(): pg.Client {
    const next = new pg.Client({
      connectionString: this.#options.databaseUrl,
      keepAlive: true,
      query_timeout: 10_000,
      application_name: 'switchboard-event-bus',
    });
    next.on('error', (err) => {
      if (this.#client === next) this.#scheduleReconnect(err);
    });
    next.on('end', () => {
      if (this.#client === next && !this.#closed) this.#scheduleReconnect(new Error('connection ended'));
    });
    next.on('notification', (message) => {
      if (message.channel === ANNOUNCE_CHANNEL) this.#dispatch(message.payload);
    });
    return next;
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    this.#state = 'connecting';
    const next = this.#newClient();
    this.#client = next;
    try {
      await next.connect();
      await next.query(`LISTEN ${ANNOUNCE_CHANNEL}`);
    } catch (err: unknown) {
      if (this.#client === next) this.#scheduleReconnect(err);
      else next.end().catch(() => undefined);
      return;
    }
    if (this.#closed || this.#client !== next) {
      next.end().catch(() => undefined);
      return;
    }
    this.#connected(next);
  }

  #connected(client: pg.Client): void {
    if (this.#everConnected) {
      this.#logger.info({ attempts: this.#attempt }, 'event bus LISTEN connection re-established');
    }
    this.#everConnected = true;
    this.#attempt = 0;
    this.#state = 'connected';
    // A silently dead connection (a dropped route, a frozen peer) is noticed by its failing probe.
    this.#heartbeatTimer = setInterval(() => {
      client.query('SELECT 1').catch((err: unknown) => {
        if (this.#client === client) this.#scheduleReconnect(err);
      });
    }, this.#options.heartbeatMs ?? 30_000);
    this.#heartbeatTimer.unref();
    this.#resolveReady();
  }
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
