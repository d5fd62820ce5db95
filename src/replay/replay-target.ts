/**
 * Replay's side of the sending path: which target a call means, and how a failure of the path is
 * said to a replay's caller (the MCP contract's invalid_argument and replay_failed).
 */
import { AppError } from '../errors/app-error.ts';
import { DeliveryFailure } from '../outbound/delivery-failure.ts';
import { displayTarget } from '../outbound/send-request.ts';
import { parseTarget } from '../outbound/target-policy/target-url.ts';

/**
 * The sending path's failure in replay's words: a refusal is the caller's invalid_argument, a
 * transport failure the contract's replay_failed, each with the history's reason.
 */
export function replayError(failure: DeliveryFailure, url: string): AppError {
  const options = { reason: failure.reason, cause: failure };
  return failure.code === 'refused'
    ? new AppError('invalid_argument', `replay target refused: ${failure.detail}`, options)
    : new AppError('replay_failed', `replay to ${displayTarget(url)} failed: ${failure.detail}`, options);
}

const isBlank = (value: string | undefined): value is undefined => value === undefined || value.trim() === '';

/**
 * The call's target_url, else `replay.default_target`, checked without touching the network (no
 * DNS, no connection). The default is validated exactly like a call's own target.
 */
export function chooseReplayTarget(raw: string | undefined, defaultTarget: string | undefined): URL {
  const chosen = isBlank(raw) ? defaultTarget : raw;
  if (isBlank(chosen)) {
    throw new AppError(
      'invalid_argument',
      'replay target refused: no target_url was given and replay.default_target is not configured',
      { reason: 'bad_target' },
    );
  }
  try {
    return parseTarget(chosen);
  } catch (error) {
    throw error instanceof DeliveryFailure ? replayError(error, chosen) : error;
  }
}
