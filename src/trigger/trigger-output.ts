/**
 * What `switchboard trigger` prints: the sample, where it went, and the answer. The answer's body
 * is escaped for the terminal (`\x1b`, `\u202e`): whatever answered at --url chose its bytes.
 */
import { escapeForTerminal } from '../shared/terminal-text.ts';
import type { TriggerResult } from './trigger-sample.ts';

/** `note` says why the URL is that one (`port from PORT`) when it was not given with --url. */
export function describeTriggerResult(result: TriggerResult, note?: string): string {
  const where = note === undefined ? result.url : `${result.url} (${note})`;
  return `${escapeForTerminal(`${result.sample} → ${where}: ${result.status} ${result.body}`)}\n`;
}
