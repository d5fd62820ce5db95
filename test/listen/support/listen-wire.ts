/**
 * What a `switchboard listen` wire test stands on: the composed server on its own database on
 * 127.0.0.1, local apps on 127.0.0.1 that record what arrives, listen as a child process with a
 * state directory of its own, and the cleanups that stop them all, last first.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startComposedServer, type ComposedServer } from '../../support/composed-server.ts';
import { startConsumer, type Consumer } from '../../support/local-server.ts';
import { spawnListen, type ListenChild } from '../../support/spawn-listen.ts';

export interface ListenWire {
  composed: ComposedServer;
  /** The server's base URL. */
  server: string;
  /** Runs at close, after everything added later. */
  defer(cleanup: () => Promise<void>): void;
  stateDir(): Promise<string>;
  consumer(): Promise<Consumer>;
  /** POSTs to the server (a JSON Content-Type unless the headers say otherwise); the status. */
  post(path: string, body: string, headers: Record<string, string>): Promise<number>;
  /** listen forwarding to the consumer's /webhooks, with the bearer token and this state directory. */
  listen(
    target: Consumer,
    args: readonly string[],
    state: string,
    serverUrl?: string,
    env?: Record<string, string>,
  ): ListenChild;
  close(): Promise<void>;
}

export async function startListenWire(options: { token: string; config: string }): Promise<ListenWire> {
  const composed = await startComposedServer({ envToken: options.token, config: options.config });
  const server = composed.running.url;
  const cleanups: (() => Promise<void>)[] = [];
  const defer = (cleanup: () => Promise<void>): void => void cleanups.push(cleanup);
  return {
    composed,
    server,
    defer,
    async stateDir() {
      const dir = await mkdtemp(join(tmpdir(), 'sb-listen-state-'));
      defer(() => rm(dir, { recursive: true, force: true }));
      return dir;
    },
    async consumer() {
      const c = await startConsumer();
      defer(() => c.close());
      return c;
    },
    async post(path, body, headers) {
      const res = await fetch(`${server}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
      await res.arrayBuffer();
      return res.status;
    },
    listen(target, args, state, serverUrl = server, env = {}) {
      const child = spawnListen([serverUrl, '--forward-to', target.url('/webhooks'), ...args], {
        SWITCHBOARD_TOKEN: options.token,
        XDG_STATE_HOME: state,
        ...env,
      });
      defer(async () => {
        await child.stop('SIGKILL');
      });
      return child;
    },
    async close() {
      for (const cleanup of cleanups.reverse()) await cleanup();
      await composed.close();
    },
  };
}
