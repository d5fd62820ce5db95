/** The store's public surface; other folders import from here. */
export type { EventStore, InsertResult, ListQuery, NewEvent, StoredEvent } from './event-store.ts';
export {
  assertStorePool,
  createDatabasePool,
  databaseOptionsFromEnv,
  isDatabaseUp,
  openDatabase,
  redactUrl,
  type Database,
  type OpenDatabaseOptions,
  type PoolOptions,
} from './database.ts';
export {
  loadMigrations,
  migrate,
  MigrationError,
  type MigrateOptions,
  type MigrateResult,
  type Migration,
} from './migrate.ts';
export {
  createEventStore,
  MAX_STATEMENT_EVENTS,
  MAX_STATEMENT_PAYLOAD_BYTES,
  type PgEventStore,
} from './pg-event-store.ts';
export { toEventDetail, toEventPayload, toEventSummary } from './event-mapping.ts';
export { decodeCursor, encodeCursor, type CursorPosition } from './cursor.ts';
export { listQueryFromInput } from './list-query.ts';
export {
  createTokenRepository,
  hashToken,
  type ApiToken,
  type CreatedToken,
  type TokenRepository,
} from './token-repository.ts';
export {
  createReplayAttemptRepository,
  type NewReplayAttempt,
  type ReplayAttemptRepository,
} from './replay-attempt-repository.ts';
export { createSettingsRepository, type SettingsRepository } from './settings-repository.ts';
export {
  parseDuration,
  startRetention,
  type RetentionConfig,
  type RetentionJob,
  type RetentionOptions,
  type RetentionResult,
} from './retention.ts';
export {
  indexQueuedEvents,
  startSearchIndexer,
  type SearchIndexer,
  type SearchIndexerOptions,
} from './search-indexer.ts';
export {
  createDeliveryRepository,
  type AttemptRecord,
  type ClaimedDelivery,
  type ClaimRequest,
  type DeliveryRepository,
  type RetryOutcome,
  type RuleHealth,
  type SettleOutcome,
  type Settlement,
} from './delivery-repository.ts';
export type { EventStoreOptions } from './pg-event-store.ts';
