import { InternalError } from '../errors/internal-error.ts';

/** The typed failures of the embedded PostgreSQL: each message says what failed and what to do. */
export class EmbeddedPostgresError extends InternalError {
  readonly code: 'SB_ERR_EMBEDDED_POSTGRES' | 'SB_ERR_POSTGRES_UNREACHABLE' = 'SB_ERR_EMBEDDED_POSTGRES';
}

/**
 * Running as root, neither the PostgreSQL binaries nor a cluster directory could be put where the
 * postgres user reaches them. Nothing was spawned.
 */
export class PostgresUnreachableError extends EmbeddedPostgresError {
  override readonly code = 'SB_ERR_POSTGRES_UNREACHABLE';
}
