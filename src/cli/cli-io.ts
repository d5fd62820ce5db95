/** What a command reads and writes besides its arguments, so tests can run main() in-process. */
export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** A person can answer a question (data rm's confirmation). */
  stdinIsTty: boolean;
  /** Output goes to a terminal: colours and one-line text logs. */
  stdoutIsTty: boolean;
  /** Log lines of the commands whose stdout is their result go here. */
  stderrIsTty: boolean;
  /** Asks one question on the terminal; default readline on stdin. */
  ask?: (question: string) => Promise<string>;
}

/**
 * Errors whose message is the whole story (what failed and what to do): one plain line, no stack.
 * Exit 1, or 2 when the fix is a different choice of the operator's (a port someone else holds).
 */
export async function isOperatorError(err: unknown): Promise<boolean> {
  if (!(err instanceof Error)) return false;
  const [{ DataDirInUseError }, { EmbeddedPostgresError }, { PoolerError }, { PortInUseError }] = await Promise.all([
    import('../postgres/data-dir-lock.ts'),
    import('../postgres/embedded-postgres-error.ts'),
    import('../store/database/session-check.ts'),
    import('../http/port-in-use.ts'),
  ]);
  return (
    err instanceof DataDirInUseError ||
    err instanceof EmbeddedPostgresError ||
    err instanceof PoolerError ||
    err instanceof PortInUseError
  );
}

/** The exit code of a failure main() reports: 2 for a port in use (as for a bad --port), else 1. */
export async function exitCodeOf(err: unknown): Promise<number> {
  const { PortInUseError } = await import('../http/port-in-use.ts');
  return err instanceof PortInUseError ? 2 : 1;
}
