/** Raw requests to /mcp: the transport's own refusals, headers of a test's choosing. */
import type { OutgoingHttpHeaders } from 'node:http';
import {
  httpRequest,
  openStream,
  type HttpRequestOptions,
  type HttpResponse,
  type RawStream,
} from '../../support/http-client.ts';
import { initializeRequest } from '../../support/wire.ts';

export type { RawStream };
export type RawResponse = HttpResponse;

export { MCP_HEADERS } from '../../support/wire.ts';
export const INITIALIZE = initializeRequest('raw-http-test');

/** A POST to /mcp on a connection of its own, so tests stay independent. */
export function rawRequest(port: number, options: HttpRequestOptions = {}): Promise<RawResponse> {
  return httpRequest(port, { method: 'POST', path: '/mcp', ownConnection: true, ...options });
}

/** A GET to /mcp that stays open (the session's SSE stream). */
export function openRawStream(port: number, headers: OutgoingHttpHeaders, path = '/mcp'): Promise<RawStream> {
  return openStream(port, headers, path);
}
