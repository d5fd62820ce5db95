import { hostname } from 'node:os';
import type { ProviderConfig, QueueProviderConfig } from '../config/resolve-config.ts';
import { createGroupCommitter } from '../store/events/group-commit.ts';
import type { Logger } from '../log/logger.ts';
import type { EventStore } from '../store/events/event-store.ts';
import { startPubSubSource } from './pubsub-source.ts';
import {
  type BackoffOptions,
  DEFAULT_BACKOFF,
  DEFAULT_REDIS_URL,
  type QueueConnectionState,
  type QueueSource,
} from './redis-connection.ts';
import { StreamSource } from './stream-source.ts';
import { redactUrl } from '../log/redact-url.ts';

export interface QueueSourcesOptions {
  /** Every configured provider; only enabled queue providers are started. */
  providers: readonly ProviderConfig[];
  /** Default REDIS_URL, else redis://127.0.0.1:6379. */
  redisUrl?: string | undefined;
  store: EventStore;
  logger: Logger;
  /** Consumer name within stream consumer groups; default switchboard-<hostname>. Keep it stable. */
  consumer?: string;
  backoff?: BackoffOptions;
  /** Streams: entries per read, and how long a read blocks. */
  streamBatchSize?: number;
  streamBlockMs?: number;
  /** Streams: pending entries of other consumers idle this long are taken over; default 5 min. */
  claimIdleMs?: number;
}

export interface QueueSources {
  /** Undefined for a name that is not a started queue provider. */
  connectionOf(name: string): QueueConnectionState | undefined;
  stop(): Promise<void>;
}

/**
 * Starts one Redis consumer per enabled queue provider. Nothing here waits for Redis: an
 * unreachable Redis is retried in the background and shows as the provider's connection state,
 * so switchboard still serves webhooks and its UI while Redis is down.
 */
export function startQueueSources(options: QueueSourcesOptions): QueueSources {
  const redisUrl = options.redisUrl ?? process.env['REDIS_URL'] ?? DEFAULT_REDIS_URL;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const consumer = options.consumer ?? `switchboard-${hostname()}`;
  const logger = options.logger.child({ component: 'queue' });
  const committer = createGroupCommitter({ store: options.store, logger });

  const queueProviders = options.providers.filter((p): p is QueueProviderConfig => p.family === 'queue' && p.enabled);
  const sources = new Map<string, QueueSource>();
  for (const provider of queueProviders) {
    const source =
      provider.mode === 'streams'
        ? new StreamSource({
            provider,
            redisUrl,
            committer,
            logger,
            backoff,
            consumer,
            batchSize: options.streamBatchSize,
            blockMs: options.streamBlockMs,
            claimIdleMs: options.claimIdleMs,
          })
        : startPubSubSource({ provider, redisUrl, committer, logger, backoff });
    sources.set(provider.name, source);
  }
  // With no queue provider no Redis connection is made at all: say so, rather than list none.
  if (sources.size === 0) logger.info('no queue providers; Redis not used');
  else logger.info({ providers: [...sources.keys()], redis: redactUrl(redisUrl) }, 'queue sources started');

  return {
    connectionOf: (name) => sources.get(name)?.state(),
    async stop() {
      await Promise.all([...sources.values()].map((source) => source.stop()));
      await committer.drain();
    },
  };
}
