import { useEffect, useState } from 'preact/hooks';

/** The current time, updated every `ms`, so relative times move without new data. */
export function useNow(ms: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
