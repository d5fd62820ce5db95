/** `switchboard trigger` prints the answer it got; whatever answered chose its bytes (issue 26.3). */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { startConsumer, type Consumer } from '../support/local-server.ts';

let answering: Consumer;
let dir: string;

beforeAll(async () => {
  answering = await startConsumer('127.0.0.1', (_req, res) => {
    res.statusCode = 200;
    res.end('{"ok":true}\u001b[2K\r\u001b[32mverified\u001b[0m\u001b]0;owned\u0007\u202e');
  });
  dir = await mkdtemp(join(tmpdir(), 'sb-trigger-output-'));
  await writeFile(join(dir, 'sb.yaml'), 'providers:\n  sandbox: { trust_mode: open }\n');
});

afterAll(async () => {
  await answering.close();
  await rm(dir, { recursive: true, force: true });
});

describe('trigger output', () => {
  it('escapes the answer before it reaches the terminal', async () => {
    let out = '';
    const code = await main(['trigger', 'sandbox', '--config', join(dir, 'sb.yaml'), '--url', answering.url('')], {
      out: (text) => (out += text),
      err: (text) => (out += text),
    });
    expect(code).toBe(0);
    expect(answering.requests).toHaveLength(1);
    expect(out).toMatch(
      / → http:\/\/127\.0\.0\.1:\d+\/hooks\/sandbox: 200 \{"ok":true\}\\x1b\[2K\\r\\x1b\[32mverified/,
    );
    expect(out).toContain('\\x1b]0;owned\\x07\\u202e\n');
    // eslint-disable-next-line no-control-regex -- looking for control characters is the point
    expect(out.slice(0, -1)).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
  });
});
