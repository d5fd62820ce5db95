export interface CoalescingNotifier {
  /** Something changed: send now if the last send is at least intervalMs old, else once when it is. */
  trigger(): void;
  /** Drops a pending send (the session ended). */
  cancel(): void;
}

/**
 * At most one send per interval, and never a lost one: a burst of triggers inside the interval
 * becomes a single send at its end, so a subscriber always hears about the last change.
 */
export function createCoalescingNotifier(
  send: () => void,
  intervalMs: number,
  now: () => number = () => performance.now(),
): CoalescingNotifier {
  let lastSent = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  const fire = (): void => {
    timer = undefined;
    // Timers may fire a fraction of a millisecond early; the interval is a promise, so re-check.
    const wait = lastSent + intervalMs - now();
    if (wait > 0) {
      timer = setTimeout(fire, Math.ceil(wait));
      return;
    }
    lastSent = now();
    send();
  };
  return {
    trigger() {
      if (timer !== undefined) return;
      fire();
    },
    cancel() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}
