import { createRequire } from 'node:module';
import { pino, type Logger, type DestinationStream } from 'pino';
import type { PrettyOptions } from 'pino-pretty';

export type { Logger } from 'pino';

/**
 * Paths pino blanks before a line is written. Secrets should never be handed to the logger in
 * the first place; this is the second line of defence for headers and config that slip through.
 */
const REDACTED_LOG_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'headers.authorization',
  'headers.cookie',
  '*.secret',
  '*.secrets',
  '*.token',
  '*.tokens',
  'secret',
  'token',
];

export interface LoggerOptions {
  level?: string;
  destination?: DestinationStream;
  /**
   * One-line text for a person at a terminal (pino-pretty) instead of JSON lines; default: when
   * stdout is a terminal. Log collectors read stdout through a pipe, so they still get JSON.
   */
  pretty?: boolean;
  /**
   * 2 for commands whose stdout is their result (a new token, a table), so that a log line never
   * mixes into what a script reads. Default 1 (stdout), as a server logs.
   */
  fd?: 1 | 2;
}

/**
 * pino-pretty in-process and synchronous, so the last lines before an exit are not lost. Loaded
 * only for a terminal: a server whose stdout is a pipe never pays for it.
 */
function prettyStream(fd: 1 | 2): DestinationStream {
  const require = createRequire(import.meta.url);
  const build = require('pino-pretty') as (options: PrettyOptions) => DestinationStream;
  return build({
    destination: fd,
    sync: true,
    singleLine: true,
    colorize: process.env.NO_COLOR === undefined || process.env.NO_COLOR === '',
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,name',
  });
}

/**
 * The keys pino writes on every line itself. pino does not merge a logged object into them: a
 * `{ name }` or `{ pid }` field was written a second time on the same line, and most JSON parsers
 * keep only the last one, so `"name":"switchboard"` read back as a migration's name.
 */
const LINE_KEYS = ['level', 'time', 'pid', 'hostname', 'name', 'msg'] as const;

/**
 * A logged field named like one of the line's own keys is written as `<key>_field` instead, so no
 * line has a key twice. Call sites use their own names (`migration`, `postgresPid`); this is the
 * guard for one that slips through. A `msg` field is the line's message when no message is given.
 */
function withoutLineKeys(object: object, hasMessage: boolean): object {
  const clashes = (key: string): boolean =>
    (LINE_KEYS as readonly string[]).includes(key) && (key !== 'msg' || hasMessage);
  if (!Object.keys(object).some(clashes)) return object;
  return Object.fromEntries(Object.entries(object).map(([key, value]) => [clashes(key) ? `${key}_field` : key, value]));
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? process.env.LOG_LEVEL ?? 'info';
  const config = {
    name: 'switchboard',
    level,
    redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
    hooks: {
      // Here rather than in formatters.log, which cannot tell whether a message was given too.
      logMethod(this: Logger, args: Parameters<Logger['info']>, method: (...args: unknown[]) => void) {
        const [first, ...rest] = args;
        if (typeof first !== 'object' || first === null || first instanceof Error) return method.apply(this, args);
        return method.apply(this, [withoutLineKeys(first, typeof rest[0] === 'string'), ...rest]);
      },
    },
  };
  const fd = options.fd ?? 1;
  const terminal = fd === 1 ? process.stdout.isTTY : process.stderr.isTTY;
  if (options.destination) return pino(config, options.destination);
  if (options.pretty ?? terminal === true) return pino(config, prettyStream(fd));
  return fd === 1 ? pino(config) : pino(config, pino.destination(fd));
}
