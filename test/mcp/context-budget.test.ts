import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INITIALIZE, MCP_HEADERS, rawRequest } from './support/raw-http.ts';
import { startSwitchboard, type Harness } from './support/switchboard-harness.ts';
import { deliverGithub } from './support/webhooks.ts';

/** What an agent pays, in context, to learn the tools and to see one event in a list. */
// 8 KB for the whole tools/list result, as issue 17 (MCP for agents) sets it.
const TOOLS_LIST_BUDGET_BYTES = 8 * 1024;
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

describe('agent context budget', () => {
  it('keeps the whole tools/list response under 8 KB and one event summary under 300 bytes', async () => {
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
    expect((JSON.parse(toolsJson) as { result: { tools: unknown[] } }).result.tools).toHaveLength(4);

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
      `context budget: tools/list ${toolsBytes} bytes (budget ${TOOLS_LIST_BUDGET_BYTES}), one EventSummary ${summaryBytes} bytes (budget ${EVENT_SUMMARY_BUDGET_BYTES}; ${withSummaryBytes} with a 120-character summary)\n`,
    );
    expect(toolsBytes).toBeLessThanOrEqual(TOOLS_LIST_BUDGET_BYTES);
    expect(summaryBytes).toBeLessThanOrEqual(EVENT_SUMMARY_BUDGET_BYTES);
  });
});
