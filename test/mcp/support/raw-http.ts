/** Raw requests to /mcp: the transport's own refusals, headers of a test's choosing. */
import { httpRequest, type HttpRequestOptions, type HttpResponse } from '../../support/http-client.ts';
import { initializeRequest } from '../../support/wire.ts';

export type RawResponse = HttpResponse;

export { MCP_HEADERS } from '../../support/wire.ts';
export const INITIALIZE = initializeRequest('raw-http-test');

/** A POST to /mcp on a connection of its own, so tests stay independent. */
export function rawRequest(port: number, options: HttpRequestOptions = {}): Promise<RawResponse> {
  return httpRequest(port, { method: 'POST', path: '/mcp', ownConnection: true, ...options });
}
