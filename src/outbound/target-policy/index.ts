export { parseReplayTarget } from './target-url.ts';
export {
  createTargetPolicy,
  type PolicyVerdict,
  type RefusalRule,
  type TargetPolicy,
  type TargetPolicyOptions,
} from './target-policy.ts';
export {
  checkReplayTarget,
  resolveAndCheck,
  systemResolver,
  type CheckedHost,
  type CheckedReplayTarget,
  type CheckReplayTargetOptions,
  type ResolvedAddress,
  type Resolver,
} from './resolve-target.ts';
export {
  createGuardedDispatcher,
  prepareReplayDelivery,
  type ConnectAttempt,
  type GuardedDispatcherOptions,
  type RawConnector,
  type ReplayDelivery,
  type ReplayDeliveryOptions,
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
