import { describe, expect, it } from 'vitest';
import { escapeForTerminal } from '../../src/shared/terminal-text.ts';

describe('terminal escaping', () => {
  it('writes out C0, ESC, DEL, C1 and bidi controls visibly, and leaves other text alone (issue 26.3)', () => {
    expect(escapeForTerminal('\u001b[32mverified\u001b[0m')).toBe('\\x1b[32mverified\\x1b[0m');
    expect(escapeForTerminal('\u001b]0;title\u0007')).toBe('\\x1b]0;title\\x07');
    expect(escapeForTerminal('a\r\nb\tc\u0000\u007f\u0080\u009b')).toBe('a\\r\\nb\\tc\\x00\\x7f\\x80\\x9b');
    expect(escapeForTerminal('\u202atxt\u202b\u202c\u202d\u202egpj.exe\u2066\u2067\u2068\u2069')).toBe(
      '\\u202atxt\\u202b\\u202c\\u202d\\u202egpj.exe\\u2066\\u2067\\u2068\\u2069',
    );
    expect(escapeForTerminal('\u200e\u200f\u061c')).toBe('\\u200e\\u200f\\u061c');
    expect(escapeForTerminal('push café 🚀 →  …5d6e')).toBe('push café 🚀 →  …5d6e');
  });

  it('doubles the backslash, so an escape never reads as the same text typed literally', () => {
    expect(escapeForTerminal('\\x1b')).toBe('\\\\x1b');
    expect(escapeForTerminal('\u001b')).not.toBe(escapeForTerminal('\\x1b'));
  });

  it('leaves no character a terminal acts on, whatever the input', () => {
    let all = '';
    for (let code = 0; code < 0x3000; code++) all += String.fromCharCode(code);
    // eslint-disable-next-line no-control-regex -- looking for control characters is the point
    expect(escapeForTerminal(all)).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
  });
});
