import { pino, type Logger, type DestinationStream } from 'pino';

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
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? process.env.LOG_LEVEL ?? 'info';
  const config = {
    name: 'switchboard',
    level,
    redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
  };
  return options.destination ? pino(config, options.destination) : pino(config);
}
