/**
 * Text that came from a delivery (or from a server, which may pass on a delivery's bytes) is
 * escaped before it reaches a terminal. An event type is chosen by whoever sends the webhook, and a
 * raw ESC, BEL or carriage return in it could rewrite the line to a green "verified", hide a
 * "skipped" notice, or set the window title; a bidi override could make `exe.jpg` read `gpj.exe`.
 * Such characters are shown visibly instead, as a JSON or JavaScript string would write them:
 * `\x1b`, `\x07`, `\r`, `\u202e`. The backslash itself is doubled, so an escape never reads the
 * same as the text typed literally.
 */

// C0 controls (newline and tab included: a line must stay one line), DEL, C1 controls, the
// Arabic letter mark, LRM/RLM, the bidi embeddings and overrides (U+202A–U+202E) and isolates
// (U+2066–U+2069), and the backslash itself.
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\\]/g;

const hex = (code: number, width: number): string => code.toString(16).padStart(width, '0');

const SHORT: Readonly<Record<string, string>> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** The text with every character a terminal would act on, rather than show, written out as an escape. */
export function escapeForTerminal(text: string): string {
  return text.replace(UNSAFE, (char) => {
    const short = SHORT[char];
    if (short !== undefined) return short;
    const code = char.charCodeAt(0);
    return code <= 0xff ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`;
  });
}
