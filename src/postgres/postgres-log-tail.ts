/**
 * PostgreSQL's own output while it starts: logged, and its last lines kept so an error that
 * ends a start can say what the server said.
 */
import type { Logger } from '../log/logger.ts';

export interface LogTail {
  readonly onLog: (message: string) => void;
  lines(): string[];
}

/** PostgreSQL's own output goes to the logger at debug and is kept for error messages. */
export function createLogTail(logger: Logger): LogTail {
  const tail: string[] = [];
  const onLog = (message: string): void => {
    for (const raw of message.split('\n')) {
      const line = raw.trim();
      if (line === '') continue;
      tail.push(line);
      if (tail.length > 40) tail.shift();
      if (/\b(FATAL|PANIC)\b/.test(line)) logger.warn({ postgres: line }, 'embedded PostgreSQL');
      else logger.debug({ postgres: line }, 'embedded PostgreSQL');
    }
  };
  return { onLog, lines: () => [...tail] };
}

export function describeFailure(error: unknown, log: LogTail): string {
  const message = error instanceof Error ? error.message : '';
  const relevant = log
    .lines()
    .filter((line) => /FATAL|PANIC|ERROR|HINT|DETAIL|could not|initdb:/i.test(line) && !message.includes(line))
    .slice(-6);
  return [message, ...relevant].filter((part) => part !== '').join(' | ') || 'no output';
}
