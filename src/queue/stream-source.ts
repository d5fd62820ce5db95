import type { QueueProviderConfig } from '../config/resolve-config.ts';
import type { GroupCommitter } from '../store/events/group-commit.ts';
import { isDatabaseUnavailable } from '../errors/database-unavailable.ts';
import type { Logger } from '../log/logger.ts';
import { queueEvent, queueIdentitySources, streamEntryPayload } from './queue-event.ts';
import { type BackoffOptions, backoffDelay, openConsumer, type QueueSource, sleep } from './redis-connection.ts';

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
 * Over 80 lines: one closure over a consumer's state (connection, pending entries, backoff) that
 * its read loop, reclaim and stop share.
 */
export function startStreamSource(options: StreamSourceOptions): QueueSource {
  const { provider, committer } = options;
  const key = provider.channel;
  const group = provider.group;
  const logger = options.logger.child({ provider: provider.name, stream: key, group, mode: 'streams' });
  const sources = queueIdentitySources(provider);
  const batchSize = options.batchSize ?? 256;
  const blockMs = options.blockMs ?? 2_000;
  const claimIdleMs = options.claimIdleMs ?? 5 * 60_000;
  const detail = `no verification: queue message (redis stream ${key}, group ${group})`;
  const consumer = openConsumer(options.redisUrl, provider.name, logger, options.backoff);
  const { redis } = consumer;
  // After any reconnect the reply to an in-flight XREADGROUP may have been lost while Redis already
  // counted the entries as delivered; re-reading our pending list picks them up.
  let rereadPending = true;
  redis.on('ready', () => {
    rereadPending = true;
  });

  const ensureGroup = async (): Promise<void> => {
    try {
      // `$`: a new group starts with messages added from now on. To take in older entries too,
      // create the group yourself first (XGROUP CREATE <stream> <group> 0 MKSTREAM).
      await redis.xgroup('CREATE', key, group, '$', 'MKSTREAM');
      logger.info('created consumer group');
    } catch (err: unknown) {
      if (!(err instanceof Error) || !err.message.startsWith('BUSYGROUP')) throw err;
    }
  };

  const read = async (fromId: string): Promise<StreamEntry[]> => {
    const args: (string | number)[] = ['GROUP', group, options.consumer, 'COUNT', batchSize];
    if (fromId === '>') args.push('BLOCK', blockMs);
    args.push('STREAMS', key, fromId);
    return parseReadReply(await redis.callBuffer('XREADGROUP', args));
  };

  const claimStranded = async (): Promise<StreamEntry[]> => {
    const reply = await redis.callBuffer('XAUTOCLAIM', [
      key,
      group,
      options.consumer,
      claimIdleMs,
      '0-0',
      'COUNT',
      batchSize,
    ]);
    // [next cursor, entries, deleted ids]
    return Array.isArray(reply) ? parseEntries(reply[1]) : [];
  };

  /** Stores the entries and acknowledges those committed; returns whether any store was unavailable. */
  const storeEntries = async (entries: readonly StreamEntry[]): Promise<boolean> => {
    const acks: string[] = [];
    const work: Promise<void>[] = [];
    let unavailable = false;
    for (const entry of entries) {
      if (entry.fields === null) {
        logger.warn({ id: entry.id }, 'pending stream entry was deleted before it could be stored; acknowledging it');
        acks.push(entry.id);
        continue;
      }
      const { payload, fields } = streamEntryPayload(entry.fields);
      const event = queueEvent(provider, sources, {
        fields: ['x-redis-stream', key, 'x-redis-stream-id', entry.id, ...fields],
        payload,
        verifyDetail: detail,
        fallbackEventType: key,
        fallbackExternalId: entry.id,
      });
      work.push(
        committer.submit(event).then(
          () => {
            acks.push(entry.id);
          },
          (err: unknown) => {
            if (isDatabaseUnavailable(err)) unavailable = true;
            // Left unacknowledged either way: it stays pending and is read again after the next
            // reconnect or restart, rather than being dropped.
            logger.error({ err, id: entry.id }, 'stream entry not stored; left pending');
          },
        ),
      );
    }
    await Promise.all(work);
    if (acks.length > 0) await redis.xack(key, group, ...acks);
    return unavailable;
  };

  const loop = async (): Promise<void> => {
    let failures = 0;
    let pendingCursor = '0';
    let needGroup = true;
    let lastClaim = 0;
    let claimSupported = true;
    while (!consumer.stopped()) {
      try {
        if (needGroup) {
          await ensureGroup();
          needGroup = false;
        }
        if (claimSupported && Date.now() - lastClaim >= claimIdleMs) {
          lastClaim = Date.now();
          const claimed = await claimStranded().catch((err: unknown) => {
            // XAUTOCLAIM needs Redis 6.2; older servers still get everything else.
            if (!(err instanceof Error) || !/unknown command/i.test(err.message)) throw err;
            claimSupported = false;
            logger.warn(
              'this Redis has no XAUTOCLAIM (needs 6.2+): entries stranded under other consumer names are not taken over',
            );
            return [];
          });
          if (claimed.length > 0) {
            logger.info({ count: claimed.length }, 'claimed stranded pending entries');
            rereadPending = true;
            pendingCursor = '0';
          }
        }
        if (rereadPending) {
          const fromId = pendingCursor;
          const entries = await read(fromId);
          if (entries.length === 0) {
            rereadPending = false;
            pendingCursor = '0';
            continue;
          }
          pendingCursor = entries[entries.length - 1]?.id ?? '0';
          if (await storeEntries(entries)) throw new Error('database unavailable');
        } else {
          const entries = await read('>');
          if (entries.length > 0 && (await storeEntries(entries))) throw new Error('database unavailable');
        }
        failures = 0;
      } catch (err: unknown) {
        if (consumer.stopped()) break;
        failures += 1;
        if (err instanceof Error && err.message.startsWith('NOGROUP')) {
          // The stream or group vanished (Redis restarted without persistence, or someone deleted it).
          logger.warn('consumer group missing; recreating it');
          needGroup = true;
        } else {
          logger.warn({ err, failures }, 'stream consumer error; retrying');
        }
        rereadPending = true;
        pendingCursor = '0';
        await sleep(backoffDelay(failures, options.backoff), consumer.signal);
      }
    }
  };

  redis.connect().catch((err: unknown) => logger.warn({ err }, 'redis not reachable yet; retrying'));
  const running = loop().catch((err: unknown) => logger.error({ err }, 'stream consumer stopped unexpectedly'));

  // stop() drops the connection, which interrupts a blocking XREADGROUP; anything read but not yet
  // acknowledged stays pending.
  return consumer.source(provider.name, running);
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
