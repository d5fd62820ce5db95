import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EventHeaders } from '../../generated/types.ts';
import { secretHeadersOf } from '../../src/outbound/credentials.ts';
import {
  assembleDeliveryHeaders,
  deliveryHeaderSelection,
  selectStoredHeaders,
} from '../../src/outbound/outgoing-headers.ts';
import { EVENT_ID_HEADER } from '../../src/shared/header-names.ts';
import { displayTarget, transportFailure } from '../../src/outbound/send-request.ts';
import { DeliveryFailure, refused } from '../../src/outbound/delivery-failure.ts';
import { NEVER_SENT } from './never-sent.ts';
import { providersFrom } from '../support/providers.ts';

const providers = providersFrom({
  github: { preset: 'github', secret: 's' },
  shopify: { preset: 'shopify', secret: 's' },
  custom: {
    trust_mode: 'token',
    token: 't',
    token_header: 'X-Deploy-Token',
    event_type_from: 'header:X-Deploy-Kind',
    external_id_from: 'header:Authorization',
  },
  generic: { preset: 'generic-hmac', secret: 's', hmac: { header: 'X-Sig' } },
  queue: { family: 'queue', channel: 'c' },
});

function selectionFor(name: string): ReturnType<typeof deliveryHeaderSelection> {
  const config = providers.find((p) => p.name === name);
  if (!config) throw new Error(name);
  return deliveryHeaderSelection(config, secretHeadersOf(config));
}

describe('the stored headers a delivery may carry', () => {
  it('keeps a provider’s event headers, including the installation-target family, and the user agent', () => {
    const stored: EventHeaders = {
      'x-github-event': 'push',
      'x-github-hook-installation-target-type': 'integration',
      'user-agent': 'GitHub-Hookshot/x',
      'x-github-unknown-future-header': 'v',
      accept: '*/*',
    };
    expect(selectStoredHeaders(stored, selectionFor('github'))).toEqual({
      'x-github-event': 'push',
      'x-github-hook-installation-target-type': 'integration',
      'user-agent': 'GitHub-Hookshot/x',
    });
  });

  it('keeps repeated values as a list and drops a header any of whose values was redacted', () => {
    const stored: EventHeaders = { 'x-shopify-topic': ['a', 'b'], 'x-shopify-webhook-id': ['id', '[redacted]'] };
    expect(selectStoredHeaders(stored, selectionFor('shopify'))).toEqual({ 'x-shopify-topic': ['a', 'b'] });
  });

  it('event_type_from / external_id_from headers are kept, but never a credential even when named there', () => {
    const stored: EventHeaders = { 'x-deploy-kind': 'release', authorization: 'Bearer x', 'x-deploy-token': 'tok' };
    expect(selectStoredHeaders(stored, selectionFor('custom'))).toEqual({ 'x-deploy-kind': 'release' });
  });

  it('a generic-hmac provider never copies its signature header, even unredacted', () => {
    expect(selectStoredHeaders({ 'x-sig': 'abc', 'x-event-type': 'e' }, selectionFor('generic'))).toEqual({
      'x-event-type': 'e',
    });
  });

  it('a queue provider copies nothing and an unconfigured provider only the user agent', () => {
    const stored: EventHeaders = { 'user-agent': 'ua', 'x-event-type': 'e' };
    expect(selectStoredHeaders(stored, selectionFor('queue'))).toEqual({});
    expect(selectStoredHeaders(stored, deliveryHeaderSelection(undefined, []))).toEqual({ 'user-agent': 'ua' });
  });

  it('the marker and the stored content type always win; credentials replace copied headers', () => {
    const headers = assembleDeliveryHeaders({
      eventId: 'e-1',
      contentType: 'application/json; charset=utf-8',
      copied: { 'webhook-id': 'old' },
      credentials: { 'Webhook-Id': 'new', 'webhook-signature': 'v1,x' },
    });
    expect(headers).toEqual({
      'webhook-id': 'new',
      'webhook-signature': 'v1,x',
      'content-type': 'application/json; charset=utf-8',
      [EVENT_ID_HEADER]: 'e-1',
    });
  });

  it('property: whatever was stored, nothing forbidden, redacted or outside the allow-list is copied', () => {
    const names = fc.constantFrom(
      ...NEVER_SENT,
      'host',
      'content-length',
      'content-type',
      EVENT_ID_HEADER,
      'x-hub-signature-256',
      'x-hub-signature',
      'x-github-event',
      'x-github-hook-installation-target-id',
      'user-agent',
      'x-shopify-hmac-sha256',
      'x-shopify-topic',
      'x-forwarded-host',
      'proxy-connection',
      'x-deploy-token',
      'x-deploy-kind',
      'x-random',
    );
    const value = fc.oneof(fc.constant('[redacted]'), fc.string({ maxLength: 20 }));
    const headerValue = fc.oneof(value, fc.tuple(value, value));
    const selections = ['github', 'shopify', 'custom', 'generic', 'queue'].map(selectionFor);
    fc.assert(
      fc.property(fc.dictionary(names, headerValue), fc.constantFrom(...selections), (stored, selection) => {
        const out = selectStoredHeaders(stored, selection);
        for (const [name, v] of Object.entries(out)) {
          expect(NEVER_SENT).not.toContain(name);
          expect(['host', 'content-length', 'content-type', EVENT_ID_HEADER]).not.toContain(name);
          expect(name.startsWith('x-forwarded-') || name.startsWith('proxy-')).toBe(false);
          expect(selection.refused.has(name)).toBe(false);
          expect(selection.names.has(name) || selection.prefixes.some((p) => name.startsWith(p))).toBe(true);
          expect([v].flat()).not.toContain('[redacted]');
        }
      }),
    );
  });
});

describe('transport failures', () => {
  const url = 'http://127.0.0.1:9/hook?token=secret-in-query';

  it('name the target without its query string', () => {
    expect(displayTarget(url)).toBe('http://127.0.0.1:9/hook');
    const error = transportFailure(Object.assign(new Error('x'), { code: 'ECONNRESET' }), 1000);
    expect(error).toBeInstanceOf(DeliveryFailure);
    expect(error).toMatchObject({
      code: 'failed',
      reason: 'no_answer',
      detail: 'connection reset before an answer (ECONNRESET)',
    });
    // The detail never carries the target (each caller names it its own way), so never its query.
    expect(error.detail).not.toContain('secret-in-query');
  });

  it('recognise a code on a wrapped cause, timeouts, TLS failures and unknown errors', () => {
    const wrapped = new Error('fetch failed', { cause: Object.assign(new Error('inner'), { code: 'ECONNREFUSED' }) });
    expect(transportFailure(wrapped, 1000).message).toMatch(/connection refused/);
    expect(transportFailure(Object.assign(new Error('t'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), 1234).message).toMatch(
      /no answer within 1234 ms/,
    );
    expect(transportFailure(new DOMException('aborted', 'TimeoutError'), 50).message).toMatch(/no answer within 50 ms/);
    expect(transportFailure(Object.assign(new Error('t'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }), 1).message).toMatch(
      /TLS handshake failed \(DEPTH_ZERO_SELF_SIGNED_CERT\)/,
    );
    expect(transportFailure(new TypeError('odd'), 1).message).toMatch(/transport error \(TypeError\)/);
  });

  it('let a policy refusal raised while connecting through unchanged', () => {
    const refusal = refused('target_not_allowed', 'x');
    expect(transportFailure(new Error('wrapped', { cause: refusal }), 1)).toBe(refusal);
  });
});
