import { MCP_ONLY_INPUTS, TOOL_MANIFEST, type ToolName } from '../../generated/tool-manifest.ts';

/**
 * The inputs a tool's schema names, less those only the MCP tool takes (MCP_ONLY_INPUTS): what the
 * HTTP API accepts for the same call, read from the contract rather than listed again here.
 */
export function apiInputKeys(tool: ToolName): readonly string[] {
  const entry = TOOL_MANIFEST.find((candidate) => candidate.name === tool);
  const properties = entry?.inputSchema['properties'];
  if (typeof properties !== 'object' || properties === null) return [];
  const mcpOnly = new Set(MCP_ONLY_INPUTS[tool] ?? []);
  return Object.keys(properties).filter((key) => !mcpOnly.has(key));
}
