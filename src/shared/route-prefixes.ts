/**
 * Where each surface lives, in one place: the surfaces route by these, config refuses a provider
 * route inside the reserved ones, and the sending path refuses to loop into any of them.
 */
export const HOOKS_PREFIX = '/hooks';
export const MCP_PATH = '/mcp';
export const API_PREFIX = '/api';

/** The prefix itself or a path below it: `/api` and `/api/x`, not `/apis`. */
export function isUnder(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}
