/** The typed failures of the embedded PostgreSQL: each message says what failed and what to do. */
export class EmbeddedPostgresError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EmbeddedPostgresError';
  }
}

/**
 * Running as root, neither the PostgreSQL binaries nor a cluster directory could be put where the
 * postgres user reaches them. Nothing was spawned.
 */
export class PostgresUnreachableError extends EmbeddedPostgresError {
  constructor(message: string) {
    super(message);
    this.name = 'PostgresUnreachableError';
  }
}
