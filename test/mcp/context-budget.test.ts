import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INITIALIZE, MCP_HEADERS, rawRequest } from './support/raw-http.ts';
import { startMcpHarness, type Harness } from './support/switchboard-harness.ts';
import { deliverGithub } from './support/webhooks.ts';
import { EVENT_SUMMARY_LIMITS } from '../../generated/constants.ts';

/** What an agent pays, in context, to learn the tools and to see one event in a list. */
// 8 KB for the whole tools/list result, and 4 KB for the part a model reads (each tool's name,
// description and input schema), as issue 17 (MCP for agents) sets them.
const TOOLS_LIST_BUDGET_BYTES = 8 * 1024;
const MODEL_READ_BUDGET_BYTES = 4 * 1024;
const EVENT_SUMMARY_BUDGET_BYTES = 300;

let h: Harness;
beforeAll(async () => {
  h = await startMcpHarness();
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
  it('Tool listing stays within the agent context budget: the whole tools/list response under 8 KB, names, descriptions and input schemas under 4 KB, one event summary under 300 bytes even with the longest one-line summary', async () => {
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

    // A realistic, long-ish event type (GitHub's longest common one, with its action), and the
    // longest one-line summary the contract allows: 120 characters of three bytes each.
    const delivered = await deliverGithub(
      h.origin,
      JSON.stringify({
        action: 'review_requested',
        repository: { full_name: 'acme/widgets' },
        pull_request: { number: 1347, title: '修正'.repeat(100) },
      }),
      { event: 'pull_request_review_comment' },
    );
    const client = await h.connect();
    const page = await client.callTool({ name: 'list_webhook_events', arguments: { limit: 1 } });
    const [summary] = (page.structuredContent as { events: Array<{ id: string; summary: string | null }> }).events;
    expect(summary?.id).toBe(delivered.id);
    const [line] = await h.store.summaries([delivered.id]);
    expect([...(line?.summary ?? '')].length).toBe(EVENT_SUMMARY_LIMITS.maxLength);
    expect(summary?.summary?.endsWith('…')).toBe(true);
    const summaryBytes = Buffer.byteLength(JSON.stringify(summary));
    // The whole line would not have fitted: this is what MCP's cut saves.
    const withWholeLineBytes = Buffer.byteLength(JSON.stringify({ ...summary, summary: line?.summary }));
    expect(withWholeLineBytes).toBeGreaterThan(EVENT_SUMMARY_BUDGET_BYTES);

    process.stdout.write(
      `context budget: tools/list ${toolsBytes} bytes (budget ${TOOLS_LIST_BUDGET_BYTES}); names, descriptions and input schemas ${modelBytes} bytes (budget ${MODEL_READ_BUDGET_BYTES}); one EventSummary ${summaryBytes} bytes with the longest summary, cut (budget ${EVENT_SUMMARY_BUDGET_BYTES}; ${withWholeLineBytes} with the whole line)\n`,
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
