/** The MCP surface's public API; the composition root imports from here. */
export {
  createMcpSurface,
  MCP_MAX_BODY_BYTES,
  MCP_PATH,
  type McpSurface,
  type McpSurfaceDeps,
} from './create-mcp-surface.ts';
export { createMcpServer, MCP_SERVER_NAME, type McpServerDeps, type McpSessionHooks } from './create-mcp-server.ts';
export { createSwitchboardTools, type SwitchboardTools, type SwitchboardToolsDeps } from './switchboard-tools.ts';
export { RECENT_EVENTS_URI, RECENT_EVENTS_LIMIT } from './recent-events-resource.ts';
export { MCP_SECURITY_HEADERS } from './http-responses.ts';
