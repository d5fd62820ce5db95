/**
 * get_webhook_event's max_payload_bytes (issue 17): a large payload no longer floods the agent's
 * context. Real deliveries, the official SDK client over HTTP.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventDetail } from '../../generated/types.ts';
import { validateGetWebhookEventOutput } from '../../generated/validators.js';
import { limitedPayload } from '../../src/event-wire/event-detail.ts';
import { startMcpHarness, type Harness } from './support/switchboard-harness.ts';
import { callError, callOk } from './support/tool-calls.ts';
import { deliverOpen, deliverToken } from './support/webhooks.ts';

let h: Harness;
let client: Client;

beforeAll(async () => {
  h = await startMcpHarness();
  client = await h.connect();
});
afterAll(() => h?.close());

const get = (args: Record<string, unknown>): Promise<EventDetail> =>
  callOk<EventDetail>(client, 'get_webhook_event', args);

/** Text made of 1-, 2-, 3- and 4-byte characters (and JSON escapes), so most cuts fall inside one. */
function mixedText(bytes: number): string {
  const unit = 'aé€😀"\\n';
  return unit.repeat(Math.ceil(bytes / Buffer.byteLength(unit)));
}

describe('get_webhook_event max_payload_bytes', () => {
  it('Large payload is truncated at a character boundary: a prefix of whole UTF-8 characters within the limit, payload_size the full size', async () => {
    const body = JSON.stringify({ note: mixedText(200_000) });
    const delivered = await deliverOpen(h.origin, body);
    expect(delivered.status).toBe(200);
    const full = Buffer.from(body);

    // The default: 65,536 bytes.
    const byDefault = await get({ id: delivered.id });
    expect(validateGetWebhookEventOutput(byDefault)).toBe(true);
    expect(byDefault).toMatchObject({ payload_truncated: true, payload_size: full.length });
    expect(byDefault).not.toHaveProperty('received_size');
    const cut = Buffer.from(byDefault.payload.data, 'utf8');
    expect(byDefault.payload.encoding).toBe('utf8');
    expect(cut.length).toBeLessThanOrEqual(65_536);
    expect(cut.length).toBeGreaterThan(65_536 - 4);
    expect(full.subarray(0, cut.length).equals(cut)).toBe(true);

    for (const limit of [1, 2, 3, 5, 7, 100, 1001, 4099]) {
      const detail = await get({ id: delivered.id, max_payload_bytes: limit });
      const bytes = Buffer.from(detail.payload.data, 'utf8');
      expect(bytes.length, `limit ${limit}`).toBeLessThanOrEqual(limit);
      expect(bytes.length, `limit ${limit}`).toBeGreaterThan(limit - 4);
      expect(full.subarray(0, bytes.length).equals(bytes), `limit ${limit}`).toBe(true);
      expect(detail.payload.data).not.toContain('\uFFFD');
      expect(detail).toMatchObject({ payload_truncated: true, payload_size: full.length });
    }
  });

  it('Binary payload is truncated to a decodable prefix: base64 of exactly the first max_payload_bytes bytes', async () => {
    const bytes = Buffer.concat([Buffer.from([0xff, 0xfe, 0x00]), randomBytes(300_000)]);
    const delivered = await deliverToken(h.origin, bytes);
    expect(delivered.status).toBe(200);
    for (const limit of [1, 2, 3, 4, 1000, 65_535]) {
      const detail = await get({ id: delivered.id, max_payload_bytes: limit });
      expect(detail.payload.encoding).toBe('base64');
      expect(Buffer.from(detail.payload.data, 'base64').equals(bytes.subarray(0, limit)), `limit ${limit}`).toBe(true);
      expect(detail).toMatchObject({ payload_truncated: true, payload_size: bytes.length });
    }
    // A binary body whose first bytes are valid text still travels as base64.
    const textStart = Buffer.concat([Buffer.from('{"ok":true}'), Buffer.from([0xc3, 0x28])]);
    const mixed = await deliverToken(h.origin, textStart);
    const head = await get({ id: mixed.id, max_payload_bytes: 5 });
    expect(head.payload).toEqual({ encoding: 'base64', data: textStart.subarray(0, 5).toString('base64') });
  });

  it('Untruncated payload carries no truncation flag: a payload within the limit comes whole, without payload_truncated', async () => {
    const body = '{"tiny":"€"}';
    const size = Buffer.byteLength(body);
    const delivered = await deliverOpen(h.origin, body);
    for (const args of [{}, { max_payload_bytes: size }, { max_payload_bytes: 5_242_880 }]) {
      const detail = await get({ id: delivered.id, ...args });
      expect(detail.payload).toEqual({ encoding: 'utf8', data: body });
      expect(detail).not.toHaveProperty('payload_truncated');
      expect(detail.payload_size).toBe(size);
    }
    const oneShort = await get({ id: delivered.id, max_payload_bytes: size - 1 });
    // The euro sign (3 bytes) sits right before the last two characters: cutting one byte drops it whole.
    expect(oneShort.payload.data).toBe('{"tiny":"€"');
    expect(oneShort.payload_truncated).toBe(true);
  });

  it('refuses max_payload_bytes outside 1 to 5242880 as invalid_argument', async () => {
    const { id } = await deliverOpen(h.origin, '{"type":"ping"}');
    for (const max of [0, -1, 5_242_881, 1.5, '10']) {
      const error = await callError(client, 'get_webhook_event', { id, max_payload_bytes: max });
      expect(error.code, String(max)).toBe('invalid_argument');
      expect(error.message).toMatch(/max_payload_bytes/);
    }
  });

  it('cuts any text at a whole character and any bytes at the byte (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.integer({ min: 1, max: 1300 }), (text, limit) => {
        const bytes = Buffer.from(text, 'utf8');
        const { payload, truncated } = limitedPayload(bytes, limit);
        expect(truncated).toBe(bytes.length > limit);
        const back = Buffer.from(payload.data, payload.encoding === 'base64' ? 'base64' : 'utf8');
        expect(back.length).toBeLessThanOrEqual(limit);
        expect(bytes.subarray(0, back.length).equals(back)).toBe(true);
        // Nothing more than the one split character is dropped.
        if (truncated) expect(back.length).toBeGreaterThan(limit - 4);
      }),
    );
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 400 }), fc.integer({ min: 1, max: 500 }), (raw, limit) => {
        const bytes = Buffer.from(raw);
        const { payload } = limitedPayload(bytes, limit);
        const back = Buffer.from(payload.data, payload.encoding === 'base64' ? 'base64' : 'utf8');
        expect(bytes.subarray(0, back.length).equals(back)).toBe(true);
        if (payload.encoding === 'base64') expect(back.length).toBe(Math.min(limit, bytes.length));
      }),
    );
  });
});
