import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INITIALIZE, MCP_HEADERS, rawRequest } from './support/raw-http.ts';
import { startSwitchboard, type Harness } from './support/switchboard-harness.ts';
import { deliverGithub } from './support/webhooks.ts';

/** What an agent pays, in context, to learn the tools and to see one event in a list. */
// 8 KB for the whole tools/list result, and 4 KB for the part a model reads (each tool's name,
// description and input schema), as issue 17 (MCP for agents) sets them.
const TOOLS_LIST_BUDGET_BYTES = 8 * 1024;
const MODEL_READ_BUDGET_BYTES = 4 * 1024;
const EVENT_SUMMARY_BUDGET_BYTES = 300;

let h: Harness;
beforeAll(async () => {
  h = await startSwitchboard();
});
afterAll(() => h?.close());

/** The JSON of the one JSON-RPC message in an SSE response. */
function sseJson(body: string): string {
  const data = body
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice('data: '.length));
  expect(data).toHaveLength(1);
  return data[0] ?? '';
}

interface ListedTool {
  name: string;
  description: string;
  inputSchema: unknown;
}

describe('agent context budget', () => {
  it('Tool listing stays within the agent context budget: the whole tools/list response under 8 KB, names, descriptions and input schemas under 4 KB, one event summary under 300 bytes', async () => {
    const auth = { authorization: `Bearer ${h.token}` };
    const init = await rawRequest(h.port, { headers: { ...MCP_HEADERS, ...auth }, body: JSON.stringify(INITIALIZE) });
    const session = { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-06-18' };
    const listed = await rawRequest(h.port, {
      headers: { ...MCP_HEADERS, ...auth, ...session },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
    });
    expect(listed.status).toBe(200);
    const toolsJson = sseJson(listed.body);
    const toolsBytes = Buffer.byteLength(toolsJson);
    const { tools } = (JSON.parse(toolsJson) as { result: { tools: ListedTool[] } }).result;
    expect(tools).toHaveLength(4);
    // What a model is shown of each tool; titles, annotations and output schemas are for the client.
    const modelRead = tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema }));
    const modelBytes = Buffer.byteLength(JSON.stringify(modelRead));

    // A realistic, long-ish summary: GitHub's longest common event type.
    const delivered = await deliverGithub(h.origin, '{"action":"review_requested"}', {
      event: 'pull_request_review_comment',
    });
    const client = await h.connect();
    const page = await client.callTool({ name: 'list_webhook_events', arguments: { limit: 1 } });
    const [summary] = (page.structuredContent as { events: Array<{ id: string }> }).events;
    expect(summary?.id).toBe(delivered.id);
    const summaryBytes = Buffer.byteLength(JSON.stringify(summary));
    // The HTTP API's one-line summary (up to 120 characters) would not fit: this event with a
    // summary of that length is what it would cost, so MCP's EventSummary leaves it out.
    expect(summary).not.toHaveProperty('summary');
    const withSummaryBytes = Buffer.byteLength(JSON.stringify({ ...summary, summary: 'x'.repeat(120) }));
    expect(withSummaryBytes).toBeGreaterThan(EVENT_SUMMARY_BUDGET_BYTES);

    process.stdout.write(
      `context budget: tools/list ${toolsBytes} bytes (budget ${TOOLS_LIST_BUDGET_BYTES}); names, descriptions and input schemas ${modelBytes} bytes (budget ${MODEL_READ_BUDGET_BYTES}); one EventSummary ${summaryBytes} bytes (budget ${EVENT_SUMMARY_BUDGET_BYTES}; ${withSummaryBytes} with a 120-character summary)\n`,
    );
    for (const tool of modelRead) {
      process.stdout.write(
        `  ${tool.name}: description ${Buffer.byteLength(tool.description)} bytes, input schema ${Buffer.byteLength(JSON.stringify(tool.inputSchema))} bytes\n`,
      );
    }
    expect(toolsBytes).toBeLessThanOrEqual(TOOLS_LIST_BUDGET_BYTES);
    expect(modelBytes).toBeLessThanOrEqual(MODEL_READ_BUDGET_BYTES);
    expect(summaryBytes).toBeLessThanOrEqual(EVENT_SUMMARY_BUDGET_BYTES);
  });
});
