/**
 * The delivery the ingest benches send: a real GitHub issues.opened delivery (without the assignee
 * list), padded through the issue body so the compact JSON is exactly PAYLOAD_BYTES.
 */
import { readFile } from 'node:fs/promises';

export const PAYLOAD_BYTES = 2048;

export async function githubPayload(): Promise<Buffer> {
  const sample = JSON.parse(await readFile(new URL('../catalog/github/issues.json', import.meta.url), 'utf8')) as {
    issue: { body: string; assignees?: unknown };
  };
  delete sample.issue.assignees;
  sample.issue.body = '';
  const base = Buffer.byteLength(JSON.stringify(sample));
  if (base > PAYLOAD_BYTES) throw new Error(`sample is ${base} bytes before padding`);
  sample.issue.body = 'x'.repeat(PAYLOAD_BYTES - base);
  const payload = Buffer.from(JSON.stringify(sample));
  if (payload.length !== PAYLOAD_BYTES) throw new Error(`payload is ${payload.length} bytes`);
  return payload;
}
