import { describe, expect, it } from 'vitest';
import { isNeverSent, NEVER_SENT_HEADERS, REPLAY_MARKER_HEADER } from '../../src/shared/never-sent-headers.ts';
import { ALWAYS_SENSITIVE_HEADERS, HOP_BY_HOP_HEADERS } from '../../src/store/sanitize-headers.ts';

describe('the never-sent header list', () => {
  it('holds every hop-by-hop header and every credential the store redacts under any preset', () => {
    expect([...HOP_BY_HOP_HEADERS, ...ALWAYS_SENSITIVE_HEADERS].filter((name) => !isNeverSent(name))).toEqual([]);
  });

  it('refuses what the sending side sets itself and what proxies add, by name and prefix', () => {
    for (const name of ['host', 'content-length', 'content-type', 'expect', 'forwarded', 'x-real-ip'])
      expect(isNeverSent(name), name).toBe(true);
    expect(isNeverSent(REPLAY_MARKER_HEADER)).toBe(true);
    expect(isNeverSent('x-forwarded-for')).toBe(true);
    expect(isNeverSent('proxy-anything')).toBe(true);
    expect(isNeverSent('x-github-event')).toBe(false);
    expect(isNeverSent('user-agent')).toBe(false);
    expect(new Set(NEVER_SENT_HEADERS).size).toBe(NEVER_SENT_HEADERS.length);
  });
});
