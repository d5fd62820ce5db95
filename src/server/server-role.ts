/**
 * What each role runs. A split deployment puts the request path (ingest) and the work that follows
 * a commit (worker) in different processes on one PostgreSQL, so a burst of webhooks does not wait
 * behind deliveries and indexing on one event loop, and each side scales by adding processes.
 */
import type { ServerRole } from '../../generated/types.ts';

export interface RoleParts {
  /** Webhook routes, queue sources, /api, /mcp and the UI. */
  ingest: boolean;
  /** Forward dispatch, search indexing and retention. */
  worker: boolean;
}

export function roleParts(role: ServerRole): RoleParts {
  return { ingest: role !== 'worker', worker: role !== 'ingest' };
}
