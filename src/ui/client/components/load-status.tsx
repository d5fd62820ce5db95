import type { JSX } from 'preact';

/** Why the last load failed, announced; nothing when it did not. */
export function ErrorAlert({ error }: { error: string | null }): JSX.Element | null {
  if (!error) return null;
  return (
    <p class="form-error" role="alert">
      {error}
    </p>
  );
}

/**
 * A polled view's state before its content: the last load's error (what was shown stays below
 * it), and until the first answer a placeholder that says Loading… unless the load failed.
 */
export function LoadStatus({ error, loaded }: { error: string | null; loaded: boolean }): JSX.Element {
  return (
    <>
      <ErrorAlert error={error} />
      {loaded ? null : <p class="muted">{error ? '' : 'Loading…'}</p>}
    </>
  );
}
