import type { QueueProviderConfig } from '../config/resolve-config.ts';
import type { GroupCommitter } from '../store/events/group-commit.ts';
import { isDatabaseUnavailable } from '../errors/database-unavailable.ts';
import type { Logger } from '../log/logger.ts';
import { queueEvent, queueIdentitySources, streamEntryPayload } from './queue-event.ts';
import {
  type BackoffOptions,
  backoffDelay,
  type Consumer,
  openConsumer,
  type QueueConnectionState,
  type QueueSource,
  sleep,
} from './redis-connection.ts';

export interface StreamSourceOptions {
  provider: QueueProviderConfig;
  redisUrl: string;
  committer: GroupCommitter;
  logger: Logger;
  backoff: BackoffOptions;
  /**
   * This instance's name in the consumer group. It must stay the same across restarts: the
   * messages a consumer read but did not acknowledge stay pending under its name, and a restarted
   * consumer re-reads exactly its own pending list.
   */
  consumer: string;
  /** Entries per XREADGROUP. */
  batchSize?: number | undefined;
  /** How long one XREADGROUP waits for new entries. */
  blockMs?: number | undefined;
  /**
   * Pending entries of other consumers idle this long are claimed, so messages held by a consumer
   * name that never comes back (a renamed host) are not stranded.
   */
  claimIdleMs?: number | undefined;
}

interface StreamEntry {
  id: string;
  /** Null when the entry was deleted from the stream while pending. */
  fields: Buffer[] | null;
}

/**
 * Redis streams through a consumer group: at-least-once. An entry is acknowledged (XACK) only
 * after its row has committed, so a crash or restart of switchboard, Redis or PostgreSQL between
 * read and acknowledgement leaves it pending, and it is read again from the pending list. Because
 * the external id defaults to the stream entry id, a re-read entry that had in fact been stored is
 * recognised as a duplicate and stored once.
 */
export class StreamSource implements QueueSource {
  readonly #options: StreamSourceOptions;
  readonly #provider: QueueProviderConfig;
  readonly #logger: Logger;
  readonly #sources: ReturnType<typeof queueIdentitySources>;
  readonly #consumer: Consumer;
  readonly #source: QueueSource;
  readonly #batchSize: number;
  readonly #claimIdleMs: number;
  /**
   * After any reconnect the reply to an in-flight XREADGROUP may have been lost while Redis already
   * counted the entries as delivered; re-reading our pending list picks them up.
   */
  #rereadPending = true;
  #pendingCursor = '0';
  #needGroup = true;
  #lastClaim = 0;
  /** XAUTOCLAIM needs Redis 6.2; older servers still get everything else. */
  #claimSupported = true;

  constructor(options: StreamSourceOptions) {
    const { provider } = options;
    this.#options = options;
    this.#provider = provider;
    this.#logger = options.logger.child({
      provider: provider.name,
      stream: provider.channel,
      group: provider.group,
      mode: 'streams',
    });
    this.#sources = queueIdentitySources(provider);
    this.#batchSize = options.batchSize ?? 256;
    this.#claimIdleMs = options.claimIdleMs ?? 5 * 60_000;
    this.#consumer = openConsumer(options.redisUrl, provider.name, this.#logger, options.backoff);
    this.#consumer.redis.on('ready', () => {
      this.#rereadPending = true;
    });
    this.#consumer.redis
      .connect()
      .catch((err: unknown) => this.#logger.warn({ err }, 'redis not reachable yet; retrying'));
    const running = this.#loop().catch((err: unknown) =>
      this.#logger.error({ err }, 'stream consumer stopped unexpectedly'),
    );
    // stop() drops the connection, which interrupts a blocking XREADGROUP; anything read but not yet
    // acknowledged stays pending.
    this.#source = this.#consumer.source(provider.name, running);
  }

  get name(): string {
    return this.#source.name;
  }

  state(): QueueConnectionState {
    return this.#source.state();
  }

  stop(): Promise<void> {
    return this.#source.stop();
  }

  async #loop(): Promise<void> {
    let failures = 0;
    while (!this.#consumer.stopped()) {
      try {
        await this.#step();
        failures = 0;
      } catch (err: unknown) {
        if (this.#consumer.stopped()) break;
        failures += 1;
        if (err instanceof Error && err.message.startsWith('NOGROUP')) {
          // The stream or group vanished (Redis restarted without persistence, or someone deleted it).
          this.#logger.warn('consumer group missing; recreating it');
          this.#needGroup = true;
        } else {
          this.#logger.warn({ err, failures }, 'stream consumer error; retrying');
        }
        this.#rereadPending = true;
        this.#pendingCursor = '0';
        await sleep(backoffDelay(failures, this.#options.backoff), this.#consumer.signal);
      }
    }
  }

  /** One turn: the group made, stranded entries claimed when due, then one read and its stores. */
  async #step(): Promise<void> {
    if (this.#needGroup) {
      await this.#ensureGroup();
      this.#needGroup = false;
    }
    await this.#claimIfDue();
    if (this.#rereadPending) {
      const entries = await this.#read(this.#pendingCursor);
      if (entries.length === 0) {
        this.#rereadPending = false;
        this.#pendingCursor = '0';
        return;
      }
      this.#pendingCursor = entries[entries.length - 1]?.id ?? '0';
      if (await this.#storeEntries(entries)) throw new Error('database unavailable');
    } else {
      const entries = await this.#read('>');
      if (entries.length > 0 && (await this.#storeEntries(entries))) throw new Error('database unavailable');
    }
  }

  async #ensureGroup(): Promise<void> {
    const { channel, group } = this.#provider;
    try {
      // `$`: a new group starts with messages added from now on. To take in older entries too,
      // create the group yourself first (XGROUP CREATE <stream> <group> 0 MKSTREAM).
      await this.#consumer.redis.xgroup('CREATE', channel, group, '$', 'MKSTREAM');
      this.#logger.info('created consumer group');
    } catch (err: unknown) {
      if (!(err instanceof Error) || !err.message.startsWith('BUSYGROUP')) throw err;
    }
  }

  async #read(fromId: string): Promise<StreamEntry[]> {
    const args: (string | number)[] = ['GROUP', this.#provider.group, this.#options.consumer, 'COUNT', this.#batchSize];
    if (fromId === '>') args.push('BLOCK', this.#options.blockMs ?? 2_000);
    args.push('STREAMS', this.#provider.channel, fromId);
    return parseReadReply(await this.#consumer.redis.callBuffer('XREADGROUP', args));
  }

  async #claimIfDue(): Promise<void> {
    if (!this.#claimSupported || Date.now() - this.#lastClaim < this.#claimIdleMs) return;
    this.#lastClaim = Date.now();
    const claimed = await this.#claimStranded().catch((err: unknown) => {
      if (!(err instanceof Error) || !/unknown command/i.test(err.message)) throw err;
      this.#claimSupported = false;
      this.#logger.warn(
        'this Redis has no XAUTOCLAIM (needs 6.2+): entries stranded under other consumer names are not taken over',
      );
      return [];
    });
    if (claimed.length > 0) {
      this.#logger.info({ count: claimed.length }, 'claimed stranded pending entries');
      this.#rereadPending = true;
      this.#pendingCursor = '0';
    }
  }

  async #claimStranded(): Promise<StreamEntry[]> {
    const { channel, group } = this.#provider;
    const reply = await this.#consumer.redis.callBuffer('XAUTOCLAIM', [
      channel,
      group,
      this.#options.consumer,
      this.#claimIdleMs,
      '0-0',
      'COUNT',
      this.#batchSize,
    ]);
    // [next cursor, entries, deleted ids]
    return Array.isArray(reply) ? parseEntries(reply[1]) : [];
  }

  /** Stores the entries and acknowledges those committed; returns whether any store was unavailable. */
  async #storeEntries(entries: readonly StreamEntry[]): Promise<boolean> {
    const { channel, group } = this.#provider;
    const acks: string[] = [];
    let unavailable = false;
    const work = entries.map(async (entry) => {
      if (entry.fields === null) {
        this.#logger.warn(
          { id: entry.id },
          'pending stream entry was deleted before it could be stored; acknowledging it',
        );
        acks.push(entry.id);
        return;
      }
      try {
        await this.#options.committer.submit(this.#eventOf(entry.id, entry.fields));
        acks.push(entry.id);
      } catch (err: unknown) {
        if (isDatabaseUnavailable(err)) unavailable = true;
        // Left unacknowledged either way: it stays pending and is read again after the next
        // reconnect or restart, rather than being dropped.
        this.#logger.error({ err, id: entry.id }, 'stream entry not stored; left pending');
      }
    });
    await Promise.all(work);
    if (acks.length > 0) await this.#consumer.redis.xack(channel, group, ...acks);
    return unavailable;
  }

  #eventOf(id: string, entryFields: Buffer[]): ReturnType<typeof queueEvent> {
    const { channel, group } = this.#provider;
    const { payload, fields } = streamEntryPayload(entryFields);
    return queueEvent(this.#provider, this.#sources, {
      fields: ['x-redis-stream', channel, 'x-redis-stream-id', id, ...fields],
      payload,
      verifyDetail: `no verification: queue message (redis stream ${channel}, group ${group})`,
      fallbackEventType: channel,
      fallbackExternalId: id,
    });
  }
}

function text(value: unknown): string | null {
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return typeof value === 'string' ? value : null;
}

/** XREADGROUP reply: null (timeout) or [[key, [[id, [field, value, …] | null], …]]]. */
function parseReadReply(reply: unknown): StreamEntry[] {
  if (!Array.isArray(reply)) return [];
  const first: unknown = reply[0];
  if (!Array.isArray(first)) return [];
  return parseEntries(first[1]);
}

function parseEntries(raw: unknown): StreamEntry[] {
  if (!Array.isArray(raw)) return [];
  const entries: StreamEntry[] = [];
  for (const item of raw) {
    if (!Array.isArray(item)) continue;
    const id = text(item[0]);
    if (id === null) continue;
    const fields: unknown = item[1];
    entries.push({
      id,
      fields: Array.isArray(fields) ? fields.filter((f): f is Buffer => Buffer.isBuffer(f)) : null,
    });
  }
  return entries;
}
