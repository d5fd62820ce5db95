/**
 * Loading what a view shows from the API, once or again and again. Every answer is checked against
 * the request that asked for it: one that a newer request (new dependencies, a reload) or unmounting
 * overtook is dropped, so a slow answer never replaces a newer view.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api-client.ts';

export interface Loaded<T> {
  /** The latest answer; null until the first one, and again when the dependencies change. */
  value: T | null;
  /** What the last load failed with, in words; null after a success. */
  error: string | null;
  /** Load again now (after a change the user made, say). */
  reload: () => void;
}

export interface PollOptions<T> {
  /** The words for a failure that is not an API error (the network, say). */
  failure: string;
  /** Load again this long after each answer; without it, load once. A failed load is retried as well. */
  everyMs?: number;
  /** Whether to keep polling after this answer (default: always). */
  keepPolling?: (value: T) => boolean;
}

export const errorText = (err: unknown, fallback: string): string => (err instanceof ApiError ? err.message : fallback);

/**
 * `load`'s answer, polled every `everyMs` while `keepPolling` says so. New dependencies start from
 * an empty view; a reload or a poll keeps what is on screen until its answer arrives.
 */
export function usePolled<T>(
  load: () => Promise<T>,
  dependencies: readonly unknown[],
  options: PollOptions<T>,
): Loaded<T> {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [generation, setGeneration] = useState(0);
  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  const latest = useRef({ load, options });
  latest.current = { load, options };
  const loadedGeneration = useRef(generation);

  useEffect(() => {
    if (loadedGeneration.current === generation) {
      // The dependencies changed (or this is the first load): what was shown belongs to the old ones.
      setValue(null);
      setError(null);
    }
    loadedGeneration.current = generation;
    let current = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const again = (): void => {
      const { everyMs } = latest.current.options;
      if (everyMs !== undefined) timer = setTimeout(run, everyMs);
    };
    const run = (): void => {
      latest.current.load().then(
        (loaded) => {
          if (!current) return;
          setValue(() => loaded);
          setError(null);
          if (latest.current.options.keepPolling?.(loaded) ?? true) again();
        },
        (err: unknown) => {
          if (!current) return;
          setError(errorText(err, latest.current.options.failure));
          again();
        },
      );
    };
    run();
    return () => {
      current = false;
      clearTimeout(timer);
    };
    // The caller names what the load depends on, as with useEffect itself.
  }, [...dependencies, generation]);
  return { value, error, reload };
}

/** `load`'s answer, loaded once per set of dependencies. */
export function useLoaded<T>(load: () => Promise<T>, dependencies: readonly unknown[], failure: string): Loaded<T> {
  return usePolled(load, dependencies, { failure });
}
