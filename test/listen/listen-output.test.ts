import { describe, expect, it } from 'vitest';
import { createPrinter, type ListenMessage } from '../../src/listen/listen-output.ts';

const forwarded: ListenMessage = {
  type: 'forwarded',
  id: '0193f0c4-5a6e-7b8c-9d0e-1f2a3b4c5d6e',
  provider: 'github',
  event_type: 'push',
  status: 200,
  error: null,
  target: 'http://localhost:3000/webhooks',
  ms: 12,
  attempt: 1,
  max_attempts: 5,
  signed: true,
};

function printed(options: { json: boolean; colour: boolean }, message: ListenMessage): string {
  let out = '';
  createPrinter({
    ...options,
    out: (t) => (out += t),
    err: (t) => (out += t),
    now: () => new Date(2025, 0, 31, 12, 1, 2),
  }).print(message);
  return out;
}

describe('listen output', () => {
  it('prints a stripe-listen-like line, coloured only when asked (on a terminal)', () => {
    expect(printed({ json: false, colour: false }, forwarded)).toBe(
      '12:01:02  --> github push …5d6e  <-- 200 POST http://localhost:3000/webhooks (12 ms)\n',
    );
    expect(printed({ json: false, colour: true }, forwarded)).toContain('\u001b[32m200\u001b[0m');
  });

  it('prints one JSON object per line with --json', () => {
    const line = printed({ json: true, colour: true }, forwarded);
    expect(line.endsWith('\n')).toBe(true);
    expect(line.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(line)).toMatchObject({ type: 'forwarded', status: 200, signed: true });
    expect(line).not.toContain('\u001b[');
  });
});
