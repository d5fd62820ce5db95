import type { ReplayResult } from '../../generated/types.ts';

export interface ReplayRequest {
  eventId: string;
  /** The caller's target, or undefined to use replay.default_target. */
  targetUrl: string | undefined;
  /** Identity of the caller (token name), for the audit log. */
  caller: string;
  /**
   * Send the stored bytes with no signature and no token. Required for an event that failed its
   * check on arrival, which is otherwise refused (invalid_argument).
   */
  unsigned?: boolean;
}

/**
 * The one replay path: MCP and the HTTP API both call this. It throws AppError with
 * not_found, invalid_argument (refused target, or an event that failed its check on arrival
 * replayed without `unsigned`) or replay_failed (transport failure).
 */
export interface ReplayService {
  replay(request: ReplayRequest): Promise<ReplayResult>;
}
