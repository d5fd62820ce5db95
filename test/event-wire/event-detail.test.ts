/**
 * The wire shapes of a stored event (src/event-wire/): the payload's encoding and the full detail,
 * without a database.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateEventDetail } from '../../generated/validators.js';
import { toEventDetail, toEventPayload } from '../../src/event-wire/event-detail.ts';
import type { StoredEvent } from '../../src/store/events/event-store.ts';

const stored = (payload: Buffer): StoredEvent => ({
  id: '01900000-0000-7000-8000-000000000001',
  provider: 'github',
  eventType: 'issues.opened',
  trustMode: 'signed',
  verified: true,
  passedCheck: true,
  verifyDetail: 'hmac-sha256 valid (X-Hub-Signature-256)',
  externalId: 'abc',
  contentType: 'application/json',
  sourceIp: '127.0.0.1',
  headers: { 'content-type': 'application/json', via: ['a', 'b'] },
  payload,
  payloadSize: payload.length,
  receivedSize: null,
  summary: null,
  request: null,
  handshake: false,
  receivedAt: '2024-05-01T12:00:00.123456Z',
});

const rebuild = (payload: { encoding: 'utf8' | 'base64'; data: string }): Buffer =>
  Buffer.from(payload.data, payload.encoding === 'utf8' ? 'utf8' : 'base64');

describe('toEventDetail', () => {
  it('always lets the exact bytes be rebuilt, choosing utf8 only for well-formed UTF-8 (property)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
          fc.string({ unit: 'grapheme', maxLength: 100 }).map((text) => Buffer.from(text, 'utf8')),
          fc.string({ unit: 'binary', maxLength: 100 }).map((text) => Buffer.from(text, 'utf8')),
        ),
        (bytes) => {
          const payload = toEventPayload(bytes);
          expect(rebuild(payload).equals(bytes)).toBe(true);
          if (payload.encoding === 'utf8') expect(Buffer.from(payload.data, 'utf8').equals(bytes)).toBe(true);
          else expect(() => new TextDecoder('utf-8', { fatal: true }).decode(bytes)).toThrow();
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('keeps a byte-order mark instead of stripping it', () => {
    const withBom = Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]);
    const payload = toEventPayload(withBom);
    expect(payload).toEqual({ encoding: 'utf8', data: '\uFEFF{}' });
    expect(rebuild(payload).equals(withBom)).toBe(true);
  });

  it('maps every field to the contract shape', () => {
    const detail = toEventDetail(stored(Buffer.from('{"a":1}')));
    expect(detail).toEqual({
      id: '01900000-0000-7000-8000-000000000001',
      provider: 'github',
      event_type: 'issues.opened',
      trust_mode: 'signed',
      verified: true,
      payload_size: 7,
      received_at: '2024-05-01T12:00:00.123456Z',
      passed_check: true,
      verify_detail: 'hmac-sha256 valid (X-Hub-Signature-256)',
      external_id: 'abc',
      content_type: 'application/json',
      source_ip: '127.0.0.1',
      headers: { 'content-type': 'application/json', via: ['a', 'b'] },
      payload: { encoding: 'utf8', data: '{"a":1}' },
    });
    expect(validateEventDetail(detail)).toBe(true);
    expect(validateEventDetail(toEventDetail(stored(Buffer.from([0xff]))))).toBe(true);
  });
});
