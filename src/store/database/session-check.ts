import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { InternalError } from '../../errors/internal-error.ts';

/**
 * The session settings the store's pool sends when it connects (slonik's statementTimeout and
 * idleInTransactionSessionTimeout, set in database.ts): a pooler must be told to let them pass.
 * @internal outside src/, only tests or benches use it
 */
export const STORE_STARTUP_PARAMETERS = ['statement_timeout', 'idle_in_transaction_session_timeout'] as const;

/**
 * DATABASE_URL goes through a connection pooler that cannot give switchboard what it needs. The
 * message says what to change; the server exits on it before serving.
 */
export class PoolerError extends InternalError {
  readonly code = 'SB_ERR_POOLER';

  /** A NOTIFY on one connection never reached a LISTEN on another: transaction pooling. */
  static transactionMode(waitedMs: number, attempts: number): PoolerError {
    return new PoolerError(
      `PostgreSQL notifications do not arrive through DATABASE_URL: a NOTIFY sent on one connection was not ` +
        `heard by a LISTEN on another (${attempts} tries, ${waitedMs} ms each). This is what a pooler in ` +
        `transaction mode does (PgBouncer pool_mode = transaction): it cannot hold a LISTEN or a session lock, so ` +
        `live updates, MCP notifications and migration locks would fail silently. Point DATABASE_URL at ` +
        `PostgreSQL itself or at a session-mode pool (see docs/deploy.md).`,
    );
  }

  /** The pooler refuses a connection parameter the store sets at connect time. */
  static startupParameter(parameter: string): PoolerError {
    const all = STORE_STARTUP_PARAMETERS.join(',');
    return new PoolerError(
      `the server at DATABASE_URL refused the connection parameter ${parameter}: a pooler such as PgBouncer ` +
        `refuses parameters it does not know. Set ignore_startup_parameters = ${all} in its configuration ` +
        `(switchboard sends each at connect time), and set them on the database role instead (ALTER ROLE … ` +
        `SET statement_timeout = '30s'), or point DATABASE_URL at PostgreSQL itself (see docs/deploy.md).`,
    );
  }
}

/** The parameter a pooler refused at connect time ("unsupported startup parameter: X"), if that is the error. */
export function refusedStartupParameter(error: unknown): string | null {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 5; depth += 1) {
    const match = /unsupported startup parameter:\s*(\w+)/i.exec(current.message);
    if (match?.[1] !== undefined) return match[1];
    current = current.cause;
  }
  return null;
}

// Its own channel: nothing else listens on it, and the live bus's channel never sees a probe.
const PROBE_CHANNEL = 'switchboard_session_check';

export interface SessionCheckOptions {
  /** How long one try waits for its notification; one normally arrives within milliseconds. */
  timeoutMs?: number;
  /** Tries before giving up, so one slow delivery on a loaded machine is not taken for a pooler. */
  attempts?: number;
}

/**
 * switchboard needs real sessions from DATABASE_URL: the live bus holds LISTEN on one connection,
 * and migrations, retention and partition upkeep hold session advisory locks across statements.
 * A pooler in transaction mode hands each transaction to whichever server connection is free, so
 * a LISTEN hears nothing and a lock can stay held on a connection nobody owns, with no error
 * anywhere. Checked once, before the first lock is taken: a notification sent on a second
 * connection must reach a LISTEN on the first, as it always does on PostgreSQL itself.
 */
export async function checkSessions(url: string, options: SessionCheckOptions = {}): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 3_000;
  const attempts = options.attempts ?? 3;
  const listener = new pg.Client({ connectionString: url, application_name: 'switchboard-session-check' });
  const sender = new pg.Client({ connectionString: url, application_name: 'switchboard-session-check' });
  // A connection lost mid-check fails the query in flight; the event alone must not crash the process.
  listener.on('error', () => undefined);
  sender.on('error', () => undefined);
  const heard = new Set<string>();
  listener.on('notification', (message) => {
    if (message.channel === PROBE_CHANNEL && message.payload !== undefined) heard.add(message.payload);
  });
  try {
    await listener.connect();
    await sender.connect();
    await listener.query(`LISTEN ${PROBE_CHANNEL}`);
    for (let attempt = 1; attempt <= attempts; attempt += 1) {
      const token = randomUUID();
      await sender.query('SELECT pg_notify($1, $2)', [PROBE_CHANNEL, token]);
      const deadline = Date.now() + timeoutMs;
      while (!heard.has(token) && Date.now() < deadline) await delay(10);
      if (heard.has(token)) return;
    }
    throw PoolerError.transactionMode(timeoutMs, attempts);
  } finally {
    await Promise.all([listener.end().catch(() => undefined), sender.end().catch(() => undefined)]);
  }
}
