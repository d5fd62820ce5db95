/**
 * What `switchboard trigger` prints: the sample, where it went, and the answer. The answer's body
 * is escaped for the terminal (`\x1b`, `\u202e`): whatever answered at --url chose its bytes.
 */
import { escapeForTerminal } from '../shared/terminal-text.ts';
import type { TriggerResult } from './trigger-sample.ts';

export function describeTriggerResult(result: TriggerResult): string {
  return `${escapeForTerminal(`${result.sample} → ${result.url}: ${result.status} ${result.body}`)}\n`;
}
