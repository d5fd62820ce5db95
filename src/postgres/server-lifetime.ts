/**
 * The running servers' lifetime in this process: each is stopped by its handle, and when the
 * process ends or is signalled without stopping them, they are stopped on the way out so no
 * cluster is orphaned.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { Logger } from '../log/logger.ts';
import type { DataDirLock } from './data-dir-lock.ts';

interface RunningServer {
  child: ChildProcess;
  stop(): Promise<void>;
}

const running = new Set<RunningServer>();
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

const isRunning = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

/** Last resort when the process exits without close(): a fast shutdown needs no event loop. */
const onExit = (): void => {
  for (const server of running) {
    if (isRunning(server.child)) server.child.kill('SIGINT');
  }
};

/**
 * Killing switchboard with SIGTERM when the application installed no handler of its own would
 * end Node without an 'exit' event and orphan the cluster. So while a cluster runs, a handler
 * keeps the default behaviour (die by that signal) but stops the cluster first. When the
 * application listens for the signal itself, it owns shutdown and calls close(); we stay out.
 */
const onSignal = (signal: NodeJS.Signals): void => {
  if (process.listenerCount(signal) > 1) return;
  void Promise.allSettled([...running].map((server) => server.stop())).then(() => {
    process.removeListener(signal, onSignal);
    process.kill(process.pid, signal);
  });
};

export function trackServer(
  child: ChildProcess,
  lock: DataDirLock,
  logger: Logger,
): { readonly stop: () => Promise<void> } {
  let stopping: Promise<void> | null = null;
  child.once('exit', (code, signal) => {
    if (!stopping) logger.error({ code, signal }, 'embedded PostgreSQL exited unexpectedly');
  });

  const server: RunningServer = {
    child,
    stop: () => {
      stopping ??= (async () => {
        try {
          await stopChild(child, logger);
        } finally {
          running.delete(server);
          if (running.size === 0) {
            process.removeListener('exit', onExit);
            for (const signal of SIGNALS) process.removeListener(signal, onSignal);
          }
          await lock.release();
        }
      })();
      return stopping;
    },
  };

  if (running.size === 0) {
    process.on('exit', onExit);
    for (const signal of SIGNALS) process.on(signal, onSignal);
  }
  running.add(server);
  return server;
}

async function stopChild(child: ChildProcess, logger: Logger): Promise<void> {
  if (!isRunning(child)) return;
  const exited = once(child, 'exit');
  child.kill('SIGINT');
  try {
    await withTimeout(exited, 30_000, 'fast shutdown');
  } catch {
    // Immediate shutdown: no checkpoint, but WAL replay on the next start makes it consistent.
    logger.warn({ postgresPid: child.pid }, 'embedded PostgreSQL ignored fast shutdown; sending SIGQUIT');
    if (isRunning(child)) child.kill('SIGQUIT');
    await withTimeout(exited, 10_000, 'immediate shutdown').catch(() => undefined);
  }
  logger.info({ postgresPid: child.pid }, 'embedded PostgreSQL stopped');
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string, onTimeout?: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      onTimeout?.();
      reject(new Error(`${what} timed out after ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
