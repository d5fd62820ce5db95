/**
 * What the store accepts as a new event, checked before any statement runs: the contract's limits
 * (from generated/), the trust rules between trust_mode, verified and passed_check, and the
 * recorded request. A bad event fails the whole batch with invalid_argument naming its index.
 */
import {
  EVENT_PROVIDER_LIMITS,
  EVENT_REQUEST_METHOD_LIMITS,
  EVENT_REQUEST_PATH_LIMITS,
  EVENT_REQUEST_QUERY_LIMITS,
  EVENT_RESPONSE_STATUS_LIMITS,
  EVENT_SUMMARY_LIMITS,
  EVENT_TYPE_LIMITS,
  TRUST_MODES,
} from '../../../generated/constants.ts';
import { invalidArgument } from '../../errors/app-error.ts';
import { isCheckedTrustMode } from './event-mapping.ts';
import type { ArrivalRequest } from '../../sanitize/sanitize-request.ts';
import type { NewEvent } from './event-store.ts';

export function checkNewEvent(event: NewEvent, index: number): void {
  const fail = (message: string): never => {
    throw invalidArgument(`event ${index}: ${message}`);
  };
  const provider = EVENT_PROVIDER_LIMITS;
  if (
    typeof event.provider !== 'string' ||
    event.provider.length < provider.minLength ||
    event.provider.length > provider.maxLength
  ) {
    fail(`provider must be ${provider.minLength} to ${provider.maxLength} characters`);
  }
  if (typeof event.eventType !== 'string' || event.eventType.length > EVENT_TYPE_LIMITS.maxLength)
    fail(`event_type must be at most ${EVENT_TYPE_LIMITS.maxLength} characters`);
  if (typeof event.verifyDetail !== 'string') fail('verify_detail must be a string');
  for (const [field, value] of [
    ['external_id', event.externalId],
    ['content_type', event.contentType],
    ['source_ip', event.sourceIp],
  ] as const) {
    if (value !== null && typeof value !== 'string') fail(`${field} must be a string or null`);
  }
  if (!(TRUST_MODES as readonly string[]).includes(event.trustMode))
    fail(`trust_mode must be one of ${TRUST_MODES.join(', ')}`);
  if (event.verified && event.trustMode !== 'signed') fail('only a signed event can be verified');
  if (event.passedCheck !== undefined) {
    if (!isCheckedTrustMode(event.trustMode)) fail('only a signed or token event has a check that passed or failed');
    if (event.trustMode === 'signed' && event.passedCheck !== event.verified) {
      fail("a signed event's check outcome is its verified flag");
    }
  }
  if (!Buffer.isBuffer(event.payload)) fail('payload must be a Buffer');
  if (
    event.receivedSize !== undefined &&
    !(Number.isInteger(event.receivedSize) && event.receivedSize > event.payload.length)
  ) {
    fail('received_size, when set, must be larger than the stored payload');
  }
  if (typeof event.headers !== 'object' || event.headers === null) fail('headers must be an object');
  if (event.summary !== undefined && event.summary !== null) {
    const { minLength, maxLength } = EVENT_SUMMARY_LIMITS;
    const length = typeof event.summary === 'string' ? codePoints(event.summary) : -1;
    if (length < minLength || length > maxLength) fail(`summary must be ${minLength} to ${maxLength} characters`);
  }
  if (event.request !== undefined) checkRequest(event.request, fail);
}

/** The length in code points (the schema's unit), without spreading the string into an array. */
function codePoints(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    // A high surrogate followed by a low one is one code point in two units.
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count -= 1;
        i += 1;
      }
    }
  }
  return count;
}

function checkRequest(request: ArrivalRequest, fail: (message: string) => never): void {
  for (const [field, value, limits] of [
    ['method', request.method, EVENT_REQUEST_METHOD_LIMITS],
    ['path', request.path, EVENT_REQUEST_PATH_LIMITS],
    ['query', request.query, { minLength: 0, ...EVENT_REQUEST_QUERY_LIMITS }],
  ] as const) {
    if (typeof value !== 'string' || value.length < limits.minLength || value.length > limits.maxLength) {
      fail(`request ${field} must be ${limits.minLength} to ${limits.maxLength} characters`);
    }
  }
  if (!isHttpStatus(request.responseStatus)) fail(`request response status must be ${HTTP_STATUS_TEXT}`);
}

const { minimum: LOWEST_STATUS, maximum: HIGHEST_STATUS } = EVENT_RESPONSE_STATUS_LIMITS;
export const HTTP_STATUS_TEXT = `an HTTP status (${LOWEST_STATUS} to ${HIGHEST_STATUS})`;
export const isHttpStatus = (status: unknown): boolean =>
  typeof status === 'number' && Number.isInteger(status) && status >= LOWEST_STATUS && status <= HIGHEST_STATUS;
