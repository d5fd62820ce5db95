import { describe, expect, it } from 'vitest';
import {
  ALWAYS_SENSITIVE_HEADERS,
  EVENT_ID_HEADER,
  HOP_BY_HOP_HEADERS,
  isNeverSent,
  NEVER_SENT_HEADERS,
} from '../../src/shared/header-names.ts';

describe('the never-sent header list', () => {
  it('holds every hop-by-hop header and every credential the store redacts under any preset (issue 26.12)', () => {
    expect([...HOP_BY_HOP_HEADERS, ...ALWAYS_SENSITIVE_HEADERS].filter((name) => !isNeverSent(name))).toEqual([]);
  });

  it('refuses what the sending side sets itself and what proxies add, by name and prefix', () => {
    for (const name of ['host', 'content-length', 'content-type', 'expect', 'forwarded', 'x-real-ip'])
      expect(isNeverSent(name), name).toBe(true);
    expect(isNeverSent(EVENT_ID_HEADER)).toBe(true);
    expect(isNeverSent('x-forwarded-for')).toBe(true);
    expect(isNeverSent('proxy-anything')).toBe(true);
    expect(isNeverSent('x-github-event')).toBe(false);
    expect(isNeverSent('user-agent')).toBe(false);
    expect(new Set(NEVER_SENT_HEADERS).size).toBe(NEVER_SENT_HEADERS.length);
  });
});
