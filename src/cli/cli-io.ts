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

/** Errors whose message is the whole story (what failed and what to do): one plain line, exit 1. */
export async function isOperatorError(err: unknown): Promise<boolean> {
  if (!(err instanceof Error)) return false;
  const [{ DataDirInUseError }, { EmbeddedPostgresError }, { PoolerError }] = await Promise.all([
    import('../postgres/data-dir-lock.ts'),
    import('../postgres/embedded-postgres-error.ts'),
    import('../store/database/session-check.ts'),
  ]);
  return err instanceof DataDirInUseError || err instanceof EmbeddedPostgresError || err instanceof PoolerError;
}
