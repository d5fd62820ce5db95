/**
 * What `switchboard listen` prints, like `stripe listen`: one line per event on stdout
 * (`12:01:02  --> github push …5d6e  <-- 200 POST http://localhost:3000/webhooks (12 ms)`), colours
 * only on a terminal, or with --json one JSON object per line for scripts.
 */

export type ListenMessage =
  | { type: 'start'; server: string; target: string; signing: boolean; from: string }
  | { type: 'warning'; message: string }
  | { type: 'ready'; server: string; target: string; signing: boolean }
  | { type: 'retry'; what: string; error: string; attempt: number; delay_ms: number }
  | { type: 'reconnected'; server: string }
  | {
      type: 'forwarded' | 'failed' | 'attempt_failed';
      id: string;
      provider: string;
      event_type: string;
      status: number | null;
      error: string | null;
      target: string;
      ms: number;
      attempt: number;
      max_attempts: number;
      signed: boolean;
      retry_in_ms?: number;
    }
  | { type: 'skipped'; id: string; provider: string; event_type: string; reason: string }
  | { type: 'summary'; forwarded: number; failed: number; skipped: number };

export interface ListenPrinter {
  print(message: ListenMessage): void;
}

const COLOURS = { dim: '\u001b[2m', green: '\u001b[32m', red: '\u001b[31m', yellow: '\u001b[33m', bold: '\u001b[1m' };
const RESET = '\u001b[0m';

function clock(now: Date): string {
  return [now.getHours(), now.getMinutes(), now.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

/** The end of the id: a UUIDv7 starts with its timestamp, so the start is the same for events a second apart. */
const shortId = (id: string): string => `…${id.slice(-4)}`;

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

export function createPrinter(options: {
  json: boolean;
  colour: boolean;
  out: (text: string) => void;
  err: (text: string) => void;
  now?: () => Date;
}): ListenPrinter {
  const now = options.now ?? ((): Date => new Date());
  const paint = (colour: keyof typeof COLOURS, text: string): string =>
    options.colour ? `${COLOURS[colour]}${text}${RESET}` : text;
  const line = (text: string): void => options.out(`${text}\n`);
  const note = (text: string): void => options.err(`${text}\n`);

  return {
    print(message) {
      if (options.json) {
        options.out(`${JSON.stringify({ time: now().toISOString(), ...message })}\n`);
        return;
      }
      const at = clock(now());
      switch (message.type) {
        case 'start':
          note(
            `Listening to ${message.server} (${message.from}); forwarding to ${message.target}` +
              (message.signing ? ', signing with your secret' : ''),
          );
          if (!message.signing)
            note(
              paint(
                'yellow',
                'Events are forwarded unsigned: give --sign-secret (or SWITCHBOARD_SIGN_SECRET) with the secret your local app verifies with.',
              ),
            );
          return;
        case 'warning':
          note(paint('yellow', `Warning: ${message.message}`));
          return;
        case 'ready':
          line(
            paint(
              'bold',
              `Ready! Forwarding ${message.server} → ${message.target} (${message.signing ? 'signing with your secret' : 'unsigned'})`,
            ),
          );
          return;
        case 'retry':
          note(
            `${at}  ${paint('yellow', `${message.what} failed (${message.error}); retry ${message.attempt} in ${seconds(message.delay_ms)}`)}`,
          );
          return;
        case 'reconnected':
          note(`${at}  ${paint('green', `Reconnected to ${message.server}`)}`);
          return;
        case 'skipped':
          line(
            `${at}  --> ${message.provider} ${message.event_type} ${shortId(message.id)}  ${paint('dim', `skipped: ${message.reason}`)}`,
          );
          return;
        case 'forwarded':
        case 'failed':
        case 'attempt_failed': {
          const outcome = message.status === null ? (message.error ?? 'error') : String(message.status);
          const colour = message.type === 'forwarded' ? 'green' : 'red';
          let tail = `(${message.ms} ms)`;
          if (message.type === 'attempt_failed')
            tail += ` attempt ${message.attempt}/${message.max_attempts}, retrying in ${seconds(message.retry_in_ms ?? 0)}`;
          if (message.type === 'failed') tail += ` gave up after ${message.attempt} attempts`;
          line(
            `${at}  --> ${message.provider} ${message.event_type} ${shortId(message.id)}  <-- ${paint(colour, outcome)} POST ${message.target} ${tail}`,
          );
          return;
        }
        case 'summary':
          line(`Stopped: ${message.forwarded} forwarded, ${message.failed} failed, ${message.skipped} skipped`);
          return;
      }
    },
  };
}
