/**
 * Requests several suites send over the wire: an MCP initialize, a signed GitHub delivery, a JSON
 * body to an open route.
 * No vitest import: bench/ may use these too.
 */
import type { GithubDelivery } from '../../bench/load-driver.ts';

/** The headers a streamable-HTTP MCP POST needs. */
export const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** An initialize request, as a client named `clientName` opens a session with. */
export function initializeRequest(clientName: string) {
  return {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: clientName, version: '1.0.0' } },
  };
}

/** POSTs an initialize to an /mcp URL with a bearer token, by fetch. */
export function postInitialize(mcpUrl: string, token: string, clientName: string): Promise<Response> {
  return fetch(mcpUrl, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, ...MCP_HEADERS },
    body: JSON.stringify(initializeRequest(clientName)),
  });
}

/** POSTs a JSON body (given as text, sent as is) by fetch. */
export function postJson(url: string, body: string): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
}

/** POSTs a signed GitHub delivery (bench/load-driver.ts builds it) to /hooks/github. */
export function postGithubDelivery(baseUrl: string, delivery: GithubDelivery): Promise<Response> {
  return fetch(`${baseUrl}/hooks/github`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': delivery.event,
      'x-github-delivery': delivery.deliveryId,
      'x-hub-signature-256': delivery.signature,
    },
    body: new Uint8Array(delivery.body),
  });
}
