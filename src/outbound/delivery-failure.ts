/**
 * How the sending path says an event did not go out. It speaks of a target and a delivery, never of
 * the caller: replay turns a failure into its contract's error (invalid_argument or replay_failed,
 * "replay target refused: …"), forwarding into an attempt's error text ("target refused: …"). Each
 * writes its own message around `detail`, so neither has to take the other's words back out.
 */
import type { ReplayErrorReason } from '../../generated/constants.ts';

/**
 * refused: nothing was sent, because the target (its URL, its address, where it loops to) is not
 * one a delivery may go to. failed: the target was allowed, and no usable answer came back.
 */
export type DeliveryFailureCode = 'refused' | 'failed';

/**
 * Why, in the terms the replay history's error_reason uses (the subset the sending path can know:
 * the event's own check and the rate limit are the callers').
 */
export type DeliveryFailureReason = Extract<
  ReplayErrorReason,
  'bad_target' | 'target_not_allowed' | 'could_not_resolve' | 'could_not_connect' | 'no_answer'
>;

export class DeliveryFailure extends Error {
  readonly code: DeliveryFailureCode;
  readonly reason: DeliveryFailureReason;
  /** What happened, without a subject: "10.0.0.1 is not on outbound.allow", "connection refused (ECONNREFUSED)". */
  readonly detail: string;

  constructor(code: DeliveryFailureCode, reason: DeliveryFailureReason, detail: string, options?: { cause?: unknown }) {
    super(detail, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DeliveryFailure';
    this.code = code;
    this.reason = reason;
    this.detail = detail;
  }
}

/** The target is not one a delivery may go to; nothing was sent. */
export const refused = (reason: DeliveryFailureReason, detail: string): DeliveryFailure =>
  new DeliveryFailure('refused', reason, detail);

/** The target was allowed, and no usable answer came back. */
export const failed = (reason: DeliveryFailureReason, detail: string, cause?: unknown): DeliveryFailure =>
  new DeliveryFailure('failed', reason, detail, { cause });
