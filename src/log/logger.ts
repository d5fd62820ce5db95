import { createRequire } from 'node:module';
import { pino, type Logger, type DestinationStream } from 'pino';
import type { PrettyOptions } from 'pino-pretty';

export type { Logger } from 'pino';

/**
 * Paths pino blanks before a line is written. Secrets should never be handed to the logger in
 * the first place; this is the second line of defence for headers and config that slip through.
 */
export const REDACTED_LOG_PATHS = [
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

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? process.env.LOG_LEVEL ?? 'info';
  const config = {
    name: 'switchboard',
    level,
    redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
  };
  const fd = options.fd ?? 1;
  const terminal = fd === 1 ? process.stdout.isTTY : process.stderr.isTTY;
  if (options.destination) return pino(config, options.destination);
  if (options.pretty ?? terminal === true) return pino(config, prettyStream(fd));
  return fd === 1 ? pino(config) : pino(config, pino.destination(fd));
}
