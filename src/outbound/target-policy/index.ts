export { parseTarget } from './target-url.ts';
export {
  createTargetPolicy,
  type PolicyVerdict,
  type RefusalRule,
  type TargetPolicy,
  type TargetPolicyOptions,
} from './target-policy.ts';
export {
  checkTarget,
  resolveAndCheck,
  systemResolver,
  type CheckedHost,
  type CheckedTarget,
  type CheckTargetOptions,
  type ResolvedAddress,
  type Resolver,
} from './resolve-target.ts';
export {
  createGuardedDispatcher,
  prepareDelivery,
  type ConnectAttempt,
  type GuardedDispatcherOptions,
  type RawConnector,
  type PrepareDeliveryOptions,
  type PreparedDelivery,
} from './guarded-dispatcher.ts';
export { isLoopPronePath, wouldLoopBack, type SelfAddress } from './self-loop.ts';
export {
  normaliseHost,
  normaliseIp,
  parseCidr,
  type IpAddress,
  type IpFamily,
  type NormalisedHost,
} from './ip-address.ts';
