import { invalidArgument } from '../errors/app-error.ts';
import type { StoredEvent } from '../store/index.ts';
import { normaliseIp, type CheckedReplayTarget } from './target-policy/index.ts';

const isLoopback = (address: string): boolean => address === '::1' || address.startsWith('127.');

/**
 * The contract says a replay never goes back to the provider that sent the event. The one address
 * known to be the sender's is the one the delivery came from, so a target resolving to it is
 * refused. Loopback is exempt: a local test sender (curl, a forwarding CLI) and the local consumer
 * share 127.0.0.1, and replaying to that consumer is the main use of replay.
 */
export function assertNotSender(target: CheckedReplayTarget, event: Pick<StoredEvent, 'id' | 'sourceIp'>): void {
  if (event.sourceIp === null) return;
  const sender = normaliseIp(event.sourceIp);
  if (sender === undefined || isLoopback(sender.address)) return;
  if (target.addresses.some((a) => a.address === sender.address)) {
    throw invalidArgument(
      `replay target refused: ${target.hostname} is ${sender.address}, the address event ${event.id} was received from; replays never go back to the sender`,
    );
  }
}
