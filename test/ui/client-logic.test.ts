import { describe, expect, it } from 'vitest';
import type { ApiEventSummary } from '../../generated/types.ts';
import { EMPTY_FILTERS, familyOf, filtersActive, filtersToQuery } from '../../src/ui/client/api-client.ts';
import { candidateLabel } from '../../src/ui/client/diff/candidate-label.ts';
import { liveEventMatches, mergeEvents, typeMatches } from '../../src/ui/client/event-filter.ts';
import {
  canonicalJson,
  formatBytes,
  formatRelative,
  formatReply,
  formatZonedTime,
  parseJsonPayload,
} from '../../src/ui/client/format.ts';
import { diffLines } from '../../src/ui/client/line-diff.ts';
import { triggerCommand } from '../../src/ui/client/providers/trigger-command.ts';
import { replayRule, trustLook } from '../../src/ui/client/trust.ts';

const summary = (over: Partial<ApiEventSummary>): ApiEventSummary => ({
  id: '0193f0c4-5a6e-7b8c-9d0e-1f2a3b4c5d6e',
  provider: 'github',
  event_type: 'push',
  trust_mode: 'signed',
  verified: true,
  payload_size: 10,
  received_at: '2025-01-31T12:00:00.000001Z',
  ...over,
});

describe('line diff', () => {
  it('marks added and removed lines and keeps the rest', () => {
    const d = diffLines('a\nb\nc\nd', 'a\nc\nd\ne');
    expect(d.map((l) => `${l.kind[0]}${l.text}`)).toEqual(['sa', 'rb', 'sc', 'sd', 'ae']);
  });

  it('is identical for identical text', () => {
    expect(diffLines('x\ny', 'x\ny').every((l) => l.kind === 'same')).toBe(true);
  });

  it('diffs canonical JSON independent of key order', () => {
    const a = canonicalJson({ b: 1, a: { y: 2, x: 1 } });
    const b = canonicalJson({ a: { x: 1, y: 3 }, b: 1 });
    const changed = diffLines(a, b).filter((l) => l.kind !== 'same');
    expect(changed.map((l) => l.text.trim())).toEqual(['"y": 2', '"y": 3']);
  });
});

describe('live-event filtering mirrors the API', () => {
  it('applies provider, dotless type family, verified and time on the client', () => {
    expect(typeMatches('issues', 'issues.opened')).toBe(true);
    expect(typeMatches('issues', 'issue_comment')).toBe(false);
    expect(typeMatches('issues.opened', 'issues.closed')).toBe(false);
    const e = summary({ event_type: 'issues.opened' });
    expect(liveEventMatches({ ...EMPTY_FILTERS, provider: 'github', eventType: 'issues' }, e)).toBe(true);
    expect(liveEventMatches({ ...EMPTY_FILTERS, provider: 'stripe' }, e)).toBe(false);
    expect(liveEventMatches({ ...EMPTY_FILTERS, verified: 'false' }, e)).toBe(false);
    expect(liveEventMatches({ ...EMPTY_FILTERS, q: 'hello' }, e)).toBe('unknown');
  });

  it('merges newest first without duplicates', () => {
    const older = summary({ id: '0193f0c4-0000-7000-8000-000000000001', received_at: '2025-01-31T12:00:00.000001Z' });
    const newer = summary({ id: '0193f0c4-0000-7000-8000-000000000002', received_at: '2025-01-31T12:00:00.000002Z' });
    expect(mergeEvents([older], [newer, older]).map((e) => e.id)).toEqual([newer.id, older.id]);
  });

  it('builds the /api/events query string', () => {
    const q = new URLSearchParams(
      filtersToQuery({ ...EMPTY_FILTERS, provider: 'github', q: ' hello ', verified: 'true' }, { limit: '50' }),
    );
    expect(Object.fromEntries(q)).toEqual({ provider: 'github', q: 'hello', verified: 'true', limit: '50' });
  });
});

describe('presentation helpers', () => {
  it('only a signed and verified event looks verified', () => {
    expect(trustLook('signed', true).level).toBe('verified');
    expect(trustLook('signed', false).label).toBe('Signature failed');
    for (const mode of ['token', 'open', 'queue'] as const) expect(trustLook(mode, false).label).toMatch(/^Unverified/);
  });

  it('parses JSON payloads', () => {
    expect(parseJsonPayload({ encoding: 'utf8', data: ' {"a":1}' })).toEqual({ value: { a: 1 } });
    expect(parseJsonPayload({ encoding: 'utf8', data: 'a=1' })).toBeUndefined();
    expect(formatBytes(2048)).toBe('2.0 KB');
  });

  it('offers a paste-able test command per provider', () => {
    const base = { enabled: true, secret_status: 'configured' as const };
    expect(
      triggerCommand(
        { ...base, name: 'gh', family: 'webhook', trust_mode: 'signed', route: '/hooks/gh' },
        'http://127.0.0.1:8080',
      ),
    ).toBe('switchboard trigger gh');
    expect(
      triggerCommand(
        { ...base, name: 'gh', family: 'webhook', trust_mode: 'signed', route: '/hooks/gh' },
        'http://127.0.0.1:9000',
      ),
    ).toBe('switchboard trigger gh --url http://127.0.0.1:9000');
    expect(
      triggerCommand(
        { ...base, name: 'gh', family: 'webhook', trust_mode: 'signed', route: '/hooks/gh' },
        'http://127.0.0.1:8080',
        'npm start --',
      ),
    ).toBe('npm start -- trigger gh');
    // A token: double quotes, so the shell expands the config's own variable (or WEBHOOK_TOKEN).
    const tokenProvider = { ...base, name: 'ci', family: 'webhook', trust_mode: 'token', route: '/hooks/ci' } as const;
    expect(
      triggerCommand(tokenProvider, 'http://h:1', 'switchboard', {
        token_header: 'x-ci-token',
        token_variable: 'CI_TOKEN',
      }),
    ).toContain(` -H "x-ci-token: $CI_TOKEN" `);
    expect(triggerCommand(tokenProvider, 'http://h:1')).toContain(` -H "X-Webhook-Token: $WEBHOOK_TOKEN" `);
    // HTTP Basic has no token header: switchboard trigger makes its Authorization header.
    expect(triggerCommand({ ...tokenProvider, name: 'chargebee' }, 'http://h:1', 'switchboard', {})).toBe(
      'switchboard trigger chargebee --url http://h:1',
    );
    expect(
      triggerCommand({ ...base, name: 'o', family: 'webhook', trust_mode: 'open', route: '/hooks/o' }, 'http://h:1'),
    ).toMatch(/^curl -X POST http:\/\/h:1\/hooks\/o /);
    expect(
      triggerCommand(
        {
          ...base,
          name: 'q',
          family: 'queue',
          trust_mode: 'queue',
          channel: 'jobs',
          mode: 'streams',
          secret_status: 'none-by-design',
        },
        'http://h:1',
      ),
    ).toMatch(/^redis-cli XADD jobs/);
  });
});

describe('replay rule for an event that failed its check', () => {
  it('asks for an unsigned replay only when a signed or token event failed its check', () => {
    expect(replayRule({ trust_mode: 'signed', verified: false, passed_check: false })).toMatch(
      /failed signature verification/,
    );
    expect(replayRule({ trust_mode: 'token', verified: false, passed_check: false })).toMatch(/token did not match/);
    expect(replayRule({ trust_mode: 'signed', verified: true, passed_check: true })).toBeNull();
    expect(replayRule({ trust_mode: 'token', verified: false, passed_check: true })).toBeNull();
    expect(replayRule({ trust_mode: 'open', verified: false })).toBeNull();
    expect(replayRule({ trust_mode: 'queue', verified: false })).toBeNull();
    // A server too old to say passed_check: a failed signature is still known from verified.
    expect(replayRule({ trust_mode: 'signed', verified: false })).toMatch(/failed signature verification/);
  });
});

describe('issue 18 helpers', () => {
  it('says how long ago in words, and the date past a week', () => {
    const now = Date.parse('2025-06-10T12:00:00.000Z');
    const ago = (ms: number): string => formatRelative(new Date(now - ms).toISOString(), now);
    expect(ago(3_000)).toBe('just now');
    expect(ago(42_000)).toBe('42 s ago');
    expect(ago(125_000)).toBe('2 min ago');
    expect(ago(3 * 3_600_000 + 5)).toBe('3 h ago');
    expect(ago(5 * 86_400_000)).toBe('5 d ago');
    expect(ago(8 * 86_400_000)).toMatch(/^2025-06-02 \d{2}:\d{2}:\d{2}$/);
    // Issue 26.16: a live row a little ahead of the clock tick it is drawn with (or of the
    // browser's clock) is "just now", not a clock time.
    expect(ago(-3)).toBe('just now');
    expect(ago(-999)).toBe('just now');
    expect(ago(-14_000)).toBe('just now');
    expect(ago(-59_000)).toBe('just now');
    // A clock a minute or more ahead of the browser's shows the time rather than "in the future".
    expect(ago(-60_000)).toMatch(/^\d{2}:\d{2}:\d{2}$/);
  });

  it('keeps the stored microseconds in the UTC tooltip', () => {
    const { local, utc } = formatZonedTime('2025-06-10T12:05:03.123456Z');
    expect(utc).toBe('2025-06-10 12:05:03.123456 UTC');
    expect(local).toMatch(/^2025-06-1[01] \d{2}:\d{2}:03\.123 UTC/);
  });

  it('knows when filters are set and what family a type belongs to', () => {
    expect(filtersActive(EMPTY_FILTERS)).toBe(false);
    expect(filtersActive({ ...EMPTY_FILTERS, q: '  ' })).toBe(false);
    expect(filtersActive({ ...EMPTY_FILTERS, verified: 'true' })).toBe(true);
    expect(familyOf('pull_request.opened')).toBe('pull_request');
    expect(familyOf('push')).toBe('push');
  });

  it('labels a diff candidate with its type, summary and time', () => {
    const label = candidateLabel(summary({ event_type: 'pull_request.closed', summary: 'octo/api · closed #4' }));
    expect(label.startsWith('pull_request.closed — octo/api · closed #4 — ')).toBe(true);
    expect(label.endsWith(' · github · 3b4c5d6e')).toBe(true);
    expect(candidateLabel(summary({}))).not.toContain('undefined');
  });

  it('says Unverified in words on every badge that is not verified', () => {
    expect(trustLook('token', false).short).toBe('Unverified · token');
    expect(trustLook('open', false).short).toBe('Unverified · open');
    expect(trustLook('queue', false).short).toBe('Unverified · queue');
    expect(trustLook('signed', false).short).toBe('Sig failed');
  });
});

describe('formatReply', () => {
  it("says how a provider that waited for the app's reply was answered", () => {
    expect(formatReply({ outcome: 'answered', response_status: 200, response_ms: 12.4 })).toBe('answered 200 in 12 ms');
    expect(formatReply({ outcome: 'timed_out', response_ms: 2500.2 })).toBe('timed out: fallback sent after 2500 ms');
    expect(formatReply({ outcome: 'unavailable', response_ms: 3 })).toBe('app unreachable: fallback sent after 3 ms');
  });
});
