/**
 * What forwarding keeps between deliveries to one target (docs/adr/forward-connection-reuse.md):
 * the pinned connection, and the target's last check with everything it was made against, so the
 * check is repeated only when one of its inputs may have changed. KeptConnections holds both per
 * keepAliveKey (one per forward rule); replay keeps nothing.
 */
import type { Dispatcher } from 'undici';
import {
  checkTarget,
  systemResolver,
  type CheckedTarget,
  type ResolvedAddress,
  type Resolver,
} from './target-policy/resolve-target.ts';
import type { SelfAddress } from './target-policy/self-loop.ts';
import type { TargetPolicy } from './target-policy/target-policy.ts';
import { parseTarget } from './target-policy/target-url.ts';

/** A pinned dispatcher kept open for one keepAliveKey, and the checked pin it serves. */
export interface KeptConnection {
  pin: string;
  /** The verdict it was last used under: the same one needs no new pin. */
  verdict: KeptVerdict;
  dispatcher: Dispatcher;
}

/**
 * A keepAliveKey's last verdict: the checked target and everything it was checked against. It is
 * used again only for the same URL and the same self addresses, and only until the resolver's
 * answer may have changed: an IP literal never resolves; a name is asked again once its answer's
 * TTL ran out, or on every delivery when the resolver gives none (the system resolver), and a
 * different answer is checked again from scratch. A failed send drops it.
 */
export interface KeptVerdict {
  href: string;
  /** What options.selfAddresses() returned when checked; a new list (after listen) means a new check. */
  rawSelf: readonly SelfAddress[];
  selfAddresses: readonly SelfAddress[];
  target: CheckedTarget;
  requestTarget: RequestTarget;
  /** The resolver's addresses, in order; null for an IP literal. */
  answer: readonly string[] | null;
  /** When to ask the resolver again (ms since the epoch). */
  resolveAfter: number;
}

/** The origin and path (with the query) a request goes to. */
export interface RequestTarget {
  origin: string;
  path: string;
}

export function requestTargetOf(target: CheckedTarget): RequestTarget {
  const url = new URL(target.url);
  return { origin: url.origin, path: `${url.pathname}${url.search}` };
}

/** Until when an answer may be used without asking again: its shortest TTL; now when it gives none. */
function answerExpiry(answer: readonly ResolvedAddress[] | null, nowMs: number): number {
  if (answer === null) return Infinity;
  let ttl = Infinity;
  for (const entry of answer) ttl = Math.min(ttl, entry.ttl ?? 0);
  return ttl === Infinity ? nowMs : nowMs + ttl * 1000;
}

const sameAnswer = (answer: readonly ResolvedAddress[], addresses: readonly string[] | null): boolean =>
  addresses !== null && answer.length === addresses.length && answer.every((a, i) => a.address === addresses[i]);

export interface KeptConnectionsOptions {
  policy: TargetPolicy;
  /** switchboard's own listening addresses, asked per delivery because they are known only after listen. */
  selfAddresses: () => readonly SelfAddress[];
  /** The same addresses as the loop check sees them: with every webhook route served. */
  withRoutes: (self: readonly SelfAddress[]) => SelfAddress[];
  /** A guarded dispatcher pinned to a checked target (every new connection is checked again). */
  pinnedDispatcher: (target: CheckedTarget, self: readonly SelfAddress[], connectTimeoutMs: number) => Dispatcher;
  resolver?: Resolver;
  now: () => number;
}

/** The kept verdicts and pinned connections, one of each per keepAliveKey. */
export class KeptConnections {
  readonly #options: KeptConnectionsOptions;
  readonly #verdicts = new Map<string, KeptVerdict>();
  readonly #connections = new Map<string, KeptConnection>();

  constructor(options: KeptConnectionsOptions) {
    this.#options = options;
  }

  /**
   * The verdict for a kept connection's delivery to `url`: the last one while it still holds (see
   * KeptVerdict), else a fresh check. Every new connection is still checked at connect time.
   */
  async verdict(key: string, url: URL): Promise<KeptVerdict> {
    const rawSelf = this.#options.selfAddresses();
    const href = url.href;
    const last = this.#verdicts.get(key);
    if (last === undefined || last.href !== href || last.rawSelf !== rawSelf) return this.#fresh(key, href, rawSelf);
    if (this.#options.now() < last.resolveAfter) return last;
    return this.#askAgain(key, href, rawSelf, last);
  }

  /**
   * The last verdict when it still holds without asking the resolver (an IP literal, or a name
   * whose TTL has not run out): the common case, answered without a promise. Undefined when
   * verdict() has work to do.
   */
  heldVerdict(key: string, url: URL): KeptVerdict | undefined {
    const last = this.#verdicts.get(key);
    const holds =
      last !== undefined &&
      last.rawSelf === this.#options.selfAddresses() &&
      last.href === url.href &&
      this.#options.now() < last.resolveAfter;
    return holds ? last : undefined;
  }

  /** The name is asked again; the same answer keeps the verdict, any other is checked from scratch. */
  async #askAgain(key: string, href: string, rawSelf: readonly SelfAddress[], last: KeptVerdict): Promise<KeptVerdict> {
    let answer: readonly ResolvedAddress[];
    try {
      answer = await (this.#options.resolver ?? systemResolver)(last.target.hostname);
    } catch {
      // Checked again from scratch, which words the failure.
      return this.#fresh(key, href, rawSelf);
    }
    if (!sameAnswer(answer, last.answer)) return this.#fresh(key, href, rawSelf, answer);
    last.resolveAfter = answerExpiry(answer, this.#options.now());
    return last;
  }

  /** The kept connection for a verdict: the key's open one while it serves the same pin, else a new one. */
  dispatcher(key: string, verdict: KeptVerdict, connectTimeoutMs: number): Dispatcher {
    const kept = this.#connections.get(key);
    if (kept !== undefined && kept.verdict === verdict) return kept.dispatcher;
    // The pin a kept connection may serve: same origin, same checked addresses, same self addresses.
    const pin = JSON.stringify([verdict.target.origin, verdict.target.addresses, verdict.selfAddresses]);
    if (kept !== undefined && kept.pin === pin) {
      kept.verdict = verdict;
      return kept.dispatcher;
    }
    if (kept !== undefined) this.#dropConnection(key);
    const dispatcher = this.#options.pinnedDispatcher(verdict.target, verdict.selfAddresses, connectTimeoutMs);
    this.#connections.set(key, { pin, verdict, dispatcher });
    return dispatcher;
  }

  /** After a failed send: neither the connection nor its verdict is kept; the next attempt starts afresh. */
  drop(key: string): void {
    this.#dropConnection(key);
    this.#verdicts.delete(key);
  }

  /** Closes every kept connection at once (shutdown). */
  async close(): Promise<void> {
    const all = [...this.#connections.values()];
    this.#connections.clear();
    this.#verdicts.clear();
    await Promise.all(all.map((kept) => kept.dispatcher.destroy().catch(() => undefined)));
  }

  /** Checks the target from scratch (with `answer` as the resolver's, when it was just asked). */
  async #fresh(
    key: string,
    href: string,
    rawSelf: readonly SelfAddress[],
    answer?: readonly ResolvedAddress[],
  ): Promise<KeptVerdict> {
    this.#verdicts.delete(key);
    const resolver = this.#options.resolver ?? systemResolver;
    // What the resolver answered, if the host is a name (an IP literal never asks it).
    const seen: { answer: readonly ResolvedAddress[] | null } = { answer: null };
    const recording: Resolver = async (hostname) => {
      seen.answer = answer ?? (await resolver(hostname));
      return seen.answer;
    };
    const selfAddresses = this.#options.withRoutes(rawSelf);
    const target = await checkTarget(parseTarget(href), {
      policy: this.#options.policy,
      selfAddresses,
      resolver: recording,
    });
    const resolved = seen.answer;
    const verdict: KeptVerdict = {
      href,
      rawSelf,
      selfAddresses,
      target,
      requestTarget: requestTargetOf(target),
      answer: resolved === null ? null : resolved.map((a) => a.address),
      resolveAfter: answerExpiry(resolved, this.#options.now()),
    };
    this.#verdicts.set(key, verdict);
    return verdict;
  }

  /** Closes once requests already on it have finished; another delivery of the rule may be one. */
  #dropConnection(key: string): void {
    const kept = this.#connections.get(key);
    if (kept === undefined) return;
    this.#connections.delete(key);
    kept.dispatcher.close().catch(() => undefined);
  }
}
