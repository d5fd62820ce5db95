import type { ReplayResult } from '../../generated/types.ts';

export interface ReplayRequest {
  eventId: string;
  /** The caller's target, or undefined to use replay.default_target. */
  targetUrl: string | undefined;
  /** Identity of the caller (token name), for the audit log. */
  caller: string;
}

/**
 * The one replay path: MCP and the HTTP API both call this. It throws AppError with
 * not_found, invalid_argument (refused target) or replay_failed (transport failure).
 */
export interface ReplayService {
  replay(request: ReplayRequest): Promise<ReplayResult>;
}
