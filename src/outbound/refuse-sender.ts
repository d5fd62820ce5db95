import { refused } from './delivery-failure.ts';
import type { StoredEvent } from '../store/events/event-store.ts';
import { normaliseIp } from './target-policy/ip-address.ts';
import type { CheckedTarget } from './target-policy/resolve-target.ts';

const isLoopback = (address: string): boolean => address === '::1' || address.startsWith('127.');

/**
 * The contract says a stored event never goes back to the provider that sent it. The one address
 * known to be the sender's is the one the delivery came from, so a target resolving to it is
 * refused. Loopback is exempt: a local test sender (curl, a forwarding CLI) and the local consumer
 * share 127.0.0.1, and sending to that consumer is what replay and forwarding are for.
 */
export function assertNotSender(target: CheckedTarget, event: Pick<StoredEvent, 'id' | 'sourceIp'>): void {
  if (event.sourceIp === null) return;
  const sender = normaliseIp(event.sourceIp);
  if (sender === undefined || isLoopback(sender.address)) return;
  if (target.addresses.some((a) => a.address === sender.address)) {
    throw refused(
      'target_not_allowed',
      `${target.hostname} is ${sender.address}, the address event ${event.id} was received from; events never go back to their sender`,
    );
  }
}
