/**
 * What `switchboard listen` prints, like `stripe listen`: one line per event on stdout
 * (`12:01:02  --> github push …5d6e  <-- 200 POST http://localhost:3000/webhooks (12 ms)`), colours
 * only on a terminal, or with --json one JSON object per line for scripts. In text, every value is
 * escaped for the terminal first (`\x1b`, `\u202e`): it came from the server, which may pass on a
 * forged delivery's bytes.
 */
import { escapeForTerminal } from '../shared/terminal-text.ts';
import { clock, painter, shortId, type Paint } from '../shared/terminal-line.ts';

/** One send of an event to the local app: what every forwarded or replied line reports. */
interface LocalSend {
  id: string;
  provider: string;
  event_type: string;
  status: number | null;
  error: string | null;
  target: string;
  ms: number;
}

/** @internal outside src/, only tests or benches use it */
export type ListenMessage =
  | {
      type: 'start';
      server: string;
      target: string;
      signing: boolean;
      from: string;
      /**
       * Without a secret: the providers whose events a secret would sign, so they go unsigned now.
       * An asymmetric scheme's events carry their original signatures, and open and queue events
       * have nothing to sign: neither is named.
       */
      unsigned_providers: string[];
    }
  | { type: 'warning'; message: string }
  | { type: 'ready'; server: string; target: string; signing: boolean; unsigned_providers: string[] }
  | { type: 'retry'; what: string; error: string; attempt: number; delay_ms: number }
  | { type: 'reconnected'; server: string }
  | (LocalSend & {
      type: 'forwarded' | 'failed' | 'attempt_failed';
      attempt: number;
      max_attempts: number;
      signed: boolean;
      retry_in_ms?: number;
    })
  | { type: 'skipped'; id: string; provider: string; event_type: string; reason: string }
  | (LocalSend & {
      /** `--reply`: a delivery its provider waited on, and what became of the app's answer (never its bytes). */
      type: 'replied';
      /** The server's outcome (answered, failed, …), `late` when another answer came first, or why the call failed. */
      outcome: string;
    })
  | { type: 'summary'; forwarded: number; failed: number; skipped: number };

export interface ListenPrinter {
  print(message: ListenMessage): void;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/**
 * The message with every string escaped for a terminal: event types, provider names, ids, reasons
 * and error messages all come from the server, and through it from whoever sent the webhook.
 */
function escaped(message: ListenMessage): ListenMessage {
  const copy: Record<string, unknown> = { ...message };
  for (const [key, value] of Object.entries(copy)) {
    if (typeof value === 'string') copy[key] = escapeForTerminal(value);
    else if (Array.isArray(value))
      copy[key] = (value as unknown[]).map((item) => (typeof item === 'string' ? escapeForTerminal(item) : item));
  }
  return copy as unknown as ListenMessage;
}

/** One message as text: the line, and whether it is a result (stdout) or a note for the human (stderr). */
function render(message: ListenMessage, at: string, paint: Paint): { to: 'out' | 'err'; text: string } {
  switch (message.type) {
    case 'start': {
      const text =
        `Listening to ${message.server} (${message.from}); forwarding to ${message.target}` +
        (message.signing ? ', signing with your secret' : '');
      if (message.signing || message.unsigned_providers.length === 0) return { to: 'err', text };
      const unsigned = paint(
        'yellow',
        `Events of ${message.unsigned_providers.join(', ')} are forwarded unsigned: set SWITCHBOARD_SIGN_SECRET (or give --sign-secret-file) with the secret your local app verifies with.`,
      );
      return { to: 'err', text: `${text}\n${unsigned}` };
    }
    case 'warning':
      return { to: 'err', text: paint('yellow', `Warning: ${message.message}`) };
    case 'ready': {
      // Unsigned is said only of the providers it is true for (see ListenMessage's start).
      const unsigned = message.unsigned_providers;
      const how = message.signing
        ? 'signing with your secret'
        : unsigned.length > 0
          ? `${unsigned.join(', ')} unsigned`
          : null;
      const tail = how === null ? '' : ` (${how})`;
      return { to: 'out', text: paint('bold', `Ready! Forwarding ${message.server} → ${message.target}${tail}`) };
    }
    case 'retry': {
      const what = `${message.what} failed (${message.error}); retry ${message.attempt} in ${seconds(message.delay_ms)}`;
      return { to: 'err', text: `${at}  ${paint('yellow', what)}` };
    }
    case 'reconnected':
      return { to: 'err', text: `${at}  ${paint('green', `Reconnected to ${message.server}`)}` };
    case 'skipped': {
      const event = `${message.provider} ${message.event_type} ${shortId(message.id)}`;
      return { to: 'out', text: `${at}  --> ${event}  ${paint('dim', `skipped: ${message.reason}`)}` };
    }
    case 'forwarded':
    case 'failed':
    case 'attempt_failed': {
      const outcome = message.status === null ? (message.error ?? 'error') : String(message.status);
      const colour = message.type === 'forwarded' ? 'green' : 'red';
      let tail = `(${message.ms} ms)`;
      if (message.type === 'attempt_failed')
        tail += ` attempt ${message.attempt}/${message.max_attempts}, retrying in ${seconds(message.retry_in_ms ?? 0)}`;
      if (message.type === 'failed') tail += ` gave up after ${message.attempt} attempts`;
      const event = `${message.provider} ${message.event_type} ${shortId(message.id)}`;
      return { to: 'out', text: `${at}  --> ${event}  <-- ${paint(colour, outcome)} POST ${message.target} ${tail}` };
    }
    case 'replied': {
      const event = `${message.provider} ${message.event_type} ${shortId(message.id)}`;
      const got = message.status === null ? (message.error ?? 'error') : String(message.status);
      const colour = message.outcome === 'answered' ? 'green' : 'red';
      const tail = `(${message.ms} ms) reply ${paint(colour, message.outcome)}`;
      return { to: 'out', text: `${at}  --> ${event}  <-- ${got} POST ${message.target} ${tail}` };
    }
    case 'summary':
      return {
        to: 'out',
        text: `Stopped: ${message.forwarded} forwarded, ${message.failed} failed, ${message.skipped} skipped`,
      };
  }
}

export function createPrinter(options: {
  json: boolean;
  colour: boolean;
  out: (text: string) => void;
  err: (text: string) => void;
  now?: () => Date;
}): ListenPrinter {
  const now = options.now ?? ((): Date => new Date());
  const paint = painter(options.colour);
  return {
    print(message) {
      if (options.json) {
        // JSON escapes every control character itself, and a script wants the exact values.
        options.out(`${JSON.stringify({ time: now().toISOString(), ...message })}\n`);
        return;
      }
      const { to, text } = render(escaped(message), clock(now()), paint);
      options[to](`${text}\n`);
    },
  };
}
