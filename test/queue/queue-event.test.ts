import { describe, expect, it } from 'vitest';
import type { QueueProviderConfig } from '../../src/config/resolve-config.ts';
import { isJson, queueEvent, queueIdentitySources, streamEntryPayload } from '../../src/queue/queue-event.ts';
import { queueProviders } from './queue-harness.ts';

function provider(extra: Record<string, string> = {}): QueueProviderConfig {
  const [p] = queueProviders({ jobs: { family: 'queue', channel: 'jobs', mode: 'streams', ...extra } });
  if (p?.family !== 'queue') throw new Error('expected a queue provider');
  return p;
}

const b = (text: string): Buffer => Buffer.from(text);

describe('streamEntryPayload', () => {
  it('takes the payload field (before data) as the body and keeps the other fields as metadata', () => {
    expect(streamEntryPayload([b('type'), b('x'), b('data'), b('D'), b('payload'), b('P')])).toEqual({
      payload: b('P'),
      fields: ['type', 'x', 'data', 'D'],
    });
    expect(streamEntryPayload([b('data'), Buffer.from([0, 255]), b('k'), b('v')])).toEqual({
      payload: Buffer.from([0, 255]),
      fields: ['k', 'v'],
    });
  });

  it('serialises the whole entry as JSON when there is no payload or data field', () => {
    const { payload, fields } = streamEntryPayload([b('a'), b('1'), b('__proto__'), b('p'), b('a'), b('2')]);
    expect(JSON.parse(payload.toString())).toEqual({ ['__proto__']: 'p', a: '2' });
    expect(fields).toEqual(['a', '1', '__proto__', 'p', 'a', '2']);
  });
});

describe('queueEvent', () => {
  it('reads event type and external id from configured sources, falling back to channel and entry id', () => {
    const configured = provider({ event_type_from: 'header:Kind', external_id_from: '/id' });
    const event = queueEvent(configured, queueIdentitySources(configured), {
      fields: ['kind', 'job.done', 'Kind', 'second'],
      payload: b('{"id":"job-7"}'),
      verifyDetail: 'no verification: queue message (redis stream jobs, group switchboard)',
      fallbackEventType: 'jobs',
      fallbackExternalId: '1-0',
    });
    expect(event).toMatchObject({
      eventType: 'job.done',
      externalId: 'job-7',
      trustMode: 'queue',
      verified: false,
      sourceIp: null,
    });
    expect(event.headers).toEqual({ kind: ['job.done', 'second'] });

    const fallback = queueEvent(configured, queueIdentitySources(configured), {
      fields: [],
      payload: b('not json'),
      verifyDetail: 'x',
      fallbackEventType: 'jobs',
      fallbackExternalId: '1-0',
    });
    expect(fallback).toMatchObject({ eventType: 'jobs', externalId: '1-0', contentType: 'application/octet-stream' });
  });

  it('cleans identifiers that PostgreSQL could not store', () => {
    const configured = provider({ event_type_from: '/t' });
    const event = queueEvent(configured, queueIdentitySources(configured), {
      fields: [],
      payload: b(JSON.stringify({ t: `a\u0000b${'x'.repeat(500)}` })),
      verifyDetail: 'x',
      fallbackEventType: 'jobs',
      fallbackExternalId: null,
    });
    expect(event.eventType).not.toContain('\u0000');
    expect(event.eventType.length).toBe(200);
  });
});

describe('isJson', () => {
  it('accepts any JSON value in valid UTF-8 and nothing else', () => {
    expect(isJson(b('{"a":1}'))).toBe(true);
    expect(isJson(b('42'))).toBe(true);
    expect(isJson(b('"text"'))).toBe(true);
    expect(isJson(b(''))).toBe(false);
    expect(isJson(b('{bad'))).toBe(false);
    expect(isJson(Buffer.from([0x22, 0xff, 0x22]))).toBe(false);
  });
});
