import type { QueueProviderConfig } from '../config/resolve-config.ts';
import type { GroupCommitter } from '../store/events/group-commit.ts';
import { isDatabaseUnavailable } from '../errors/database-unavailable.ts';
import type { Logger } from '../log/logger.ts';
import type { NewEvent } from '../store/events/event-store.ts';
import { queueEvent, queueIdentitySources } from './queue-event.ts';
import { type BackoffOptions, backoffDelay, openConsumer, type QueueSource, sleep } from './redis-connection.ts';

export interface PubSubSourceOptions {
  provider: QueueProviderConfig;
  redisUrl: string;
  committer: GroupCommitter;
  logger: Logger;
  backoff: BackoffOptions;
  /** Messages held in memory while the database is slow or down; beyond this they are dropped. */
  maxPending?: number;
  /** Store attempts per message while the database is unavailable. */
  maxAttempts?: number;
}

/**
 * Redis pub/sub: SUBSCRIBE (or PSUBSCRIBE when `pattern`). At-most-once by nature: Redis keeps
 * nothing for a subscriber, so whatever is published while switchboard is disconnected, restarting
 * or stopped is gone. While connected, a message that cannot be stored is retried a few times with
 * backoff and then dropped with an error log; the streams mode exists for anything that must not
 * be lost.
 */
export function startPubSubSource(options: PubSubSourceOptions): QueueSource {
  const { provider, committer } = options;
  const logger = options.logger.child({ provider: provider.name, channel: provider.channel, mode: 'pubsub' });
  const sources = queueIdentitySources(provider);
  const maxPending = options.maxPending ?? 10_000;
  const maxAttempts = options.maxAttempts ?? 6;
  let pending = 0;
  let dropped = 0;

  const consumer = openConsumer(options.redisUrl, provider.name, logger, options.backoff);
  const { redis } = consumer;
  const detail = provider.pattern
    ? `no verification: queue message (redis psubscribe ${provider.channel})`
    : `no verification: queue message (redis pubsub ${provider.channel})`;

  const store = async (event: NewEvent): Promise<void> => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await committer.submit(event);
        return;
      } catch (err: unknown) {
        if (consumer.stopped() || attempt >= maxAttempts || !isDatabaseUnavailable(err)) {
          logger.error({ err, attempt }, 'pub/sub message dropped: could not be stored');
          return;
        }
        await sleep(backoffDelay(attempt, options.backoff), consumer.signal);
      }
    }
  };

  const receive = (channel: Buffer, message: Buffer, pattern: Buffer | undefined): void => {
    if (consumer.stopped()) return;
    if (pending >= maxPending) {
      dropped += 1;
      if (dropped === 1 || dropped % 1000 === 0)
        logger.error({ dropped, maxPending }, 'pub/sub messages dropped: database not keeping up');
      return;
    }
    const channelName = channel.toString('utf8');
    const fields = ['x-redis-channel', channelName];
    if (pattern !== undefined) fields.push('x-redis-pattern', pattern.toString('utf8'));
    const event = queueEvent(provider, sources, {
      fields,
      payload: Buffer.from(message),
      verifyDetail: pattern === undefined ? detail : `${detail.slice(0, -1)} on ${channelName})`,
      fallbackEventType: channelName,
      fallbackExternalId: null,
    });
    pending += 1;
    void store(event).finally(() => {
      pending -= 1;
    });
  };

  redis.on('messageBuffer', (channel: Buffer, message: Buffer) => receive(channel, message, undefined));
  redis.on('pmessageBuffer', (pattern: Buffer, channel: Buffer, message: Buffer) => receive(channel, message, pattern));

  // Subscribing is queued until the first connection succeeds; ioredis re-subscribes on every
  // reconnect by itself (autoResubscribe).
  redis.connect().catch((err: unknown) => logger.warn({ err }, 'redis not reachable yet; retrying'));
  const subscribed = provider.pattern ? redis.psubscribe(provider.channel) : redis.subscribe(provider.channel);
  subscribed.catch((err: unknown) => {
    if (!consumer.stopped()) logger.error({ err }, 'subscribe failed');
  });

  return consumer.source(provider.name);
}
