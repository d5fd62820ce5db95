/**
 * The parts of a line `switchboard listen` and `switchboard serve` print for an event, in the way
 * `stripe listen` does: the local time, the event's short id and colours, the colours only on a
 * terminal. One set, so the two commands' lines read the same.
 */

const COLOURS = { dim: '\u001b[2m', green: '\u001b[32m', red: '\u001b[31m', yellow: '\u001b[33m', bold: '\u001b[1m' };
const RESET = '\u001b[0m';

type Colour = keyof typeof COLOURS;

/** Paints text in a colour, or leaves it as it is when colours are off (not a terminal, NO_COLOR). */
export type Paint = (colour: Colour, text: string) => string;

export const painter =
  (colour: boolean): Paint =>
  (name, text) =>
    colour ? `${COLOURS[name]}${text}${RESET}` : text;

/** The local time of day, `12:01:02`. */
export function clock(now: Date): string {
  return [now.getHours(), now.getMinutes(), now.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

/** The end of the id: a UUIDv7 starts with its timestamp, so the start is the same for events a second apart. */
export const shortId = (id: string): string => `…${id.slice(-4)}`;
