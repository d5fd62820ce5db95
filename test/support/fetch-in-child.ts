import { spawn } from 'node:child_process';
import { once } from 'node:events';

/**
 * POSTs `rounds` oversized bodies with Node's fetch from a child process and returns, per round,
 * `<status> <error code>` or the network error's code. fetch runs in its own process, as a
 * sender's would: in the test's process it shares the event loop with the server and wins the
 * race a real client loses (the server closing while the client is still sending).
 */
export async function fetchInChild(
  url: string,
  bytes: number,
  rounds: number,
  headers: Record<string, string> = {},
): Promise<string[]> {
  const script = `
    const out = [];
    for (let i = 0; i < ${rounds}; i++) {
      try {
        const res = await fetch(${JSON.stringify(url)}, { method: 'POST', body: Buffer.alloc(${bytes} + i, 0x61),
          headers: ${JSON.stringify({ 'content-type': 'application/json', ...headers })} });
        const body = await res.json();
        out.push(res.status + ' ' + body.error.code);
      } catch (error) { out.push(String(error.cause?.code ?? error)); }
    }
    process.stdout.write(JSON.stringify(out));`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await once(child, 'close');
  return JSON.parse(output) as string[];
}
