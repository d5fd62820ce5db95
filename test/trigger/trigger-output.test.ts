/** `switchboard trigger` prints the answer it got; whatever answered chose its bytes (issue 26.3). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/resolve-config.ts';
import { runTrigger } from '../../src/server/run-trigger.ts';
import { startConsumer, type Consumer } from '../support/local-server.ts';

let answering: Consumer;

beforeAll(async () => {
  answering = await startConsumer('127.0.0.1', (_req, res) => {
    res.statusCode = 200;
    res.end('{"ok":true}\u001b[2K\r\u001b[32mverified\u001b[0m\u001b]0;owned\u0007\u202e');
  });
});

afterAll(async () => {
  await answering.close();
});

describe('trigger output', () => {
  it('escapes the answer before it reaches the terminal', async () => {
    let out = '';
    const code = await runTrigger({
      config: resolveConfig({ providers: { sandbox: { trust_mode: 'open' } } }),
      provider: 'sandbox',
      sample: undefined,
      baseUrl: answering.url(''),
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
