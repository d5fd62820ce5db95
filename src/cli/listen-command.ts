/**
 * `switchboard listen <server-url> --forward-to <url> [...]`: parses the flags (bad ones exit 2
 * with the usage), runs the listener until Ctrl-C or SIGTERM, and exits 0 after the summary line,
 * or 1 at once when the server refuses the token.
 */
import { homedir } from 'node:os';
import { parseArgs } from 'node:util';
import { isEventId } from '../store/event-id.ts';
import { LISTEN_USAGE } from './help-text.ts';

export interface ListenIo {
  out: (text: string) => void;
  err: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** Whether stdout is a terminal: colours only then. */
  isTty: boolean;
  /** Signals that stop listen; default SIGINT and SIGTERM of this process. */
  onStop?: (stop: () => void) => () => void;
}

const DEFAULT_MAX_ATTEMPTS = 5;
const MAX_MAX_ATTEMPTS = 100;

class ListenUsageError extends Error {}

function httpUrl(text: string, flag: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ListenUsageError(`${flag}: ${JSON.stringify(text)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ListenUsageError(`${flag}: expected an http:// or https:// URL`);
  if (url.username !== '' || url.password !== '')
    throw new ListenUsageError(`${flag}: put no credentials in the URL (use --token)`);
  return url.href;
}

interface ParsedListen {
  server: string;
  target: string;
  token: string;
  providers: string[];
  eventTypes: string[];
  signSecret: string | undefined;
  since: string | undefined;
  includeUnverified: boolean;
  maxAttempts: number;
  json: boolean;
}

function parseListenArgs(argv: readonly string[], env: NodeJS.ProcessEnv): ParsedListen | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        'forward-to': { type: 'string' },
        token: { type: 'string' },
        provider: { type: 'string', multiple: true },
        'event-type': { type: 'string', multiple: true },
        'sign-secret': { type: 'string' },
        since: { type: 'string' },
        'include-unverified': { type: 'boolean' },
        'max-attempts': { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err: unknown) {
    throw new ListenUsageError(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  if (values.help === true) return 'help';
  if (positionals.length !== 1) throw new ListenUsageError('give exactly one server URL');
  const server = httpUrl(positionals[0] ?? '', '<server-url>');
  if (values['forward-to'] === undefined) throw new ListenUsageError('--forward-to is required');
  const target = httpUrl(values['forward-to'], '--forward-to');
  const token = values.token ?? env.SWITCHBOARD_TOKEN;
  if (token === undefined || token === '') throw new ListenUsageError('give --token or set SWITCHBOARD_TOKEN');
  const signSecret = values['sign-secret'] ?? env.SWITCHBOARD_SIGN_SECRET;
  if (signSecret === '') throw new ListenUsageError('--sign-secret: empty');
  const since = values.since;
  // The server checks a time strictly (RFC 3339, offset required) and says what is wrong with it.
  if (since !== undefined && since !== 'now' && !isEventId(since) && Number.isNaN(Date.parse(since)))
    throw new ListenUsageError('--since: expected now, an RFC 3339 time such as 2025-01-31T12:00:00Z, or an event id');
  let maxAttempts = DEFAULT_MAX_ATTEMPTS;
  if (values['max-attempts'] !== undefined) {
    const text = values['max-attempts'];
    if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > MAX_MAX_ATTEMPTS)
      throw new ListenUsageError(`--max-attempts: expected a whole number from 1 to ${MAX_MAX_ATTEMPTS}`);
    maxAttempts = Number(text);
  }
  for (const value of [...(values.provider ?? []), ...(values['event-type'] ?? [])])
    if (value === '') throw new ListenUsageError('--provider and --event-type take a non-empty value');
  return {
    server,
    target,
    token,
    providers: values.provider ?? [],
    eventTypes: values['event-type'] ?? [],
    signSecret,
    since,
    includeUnverified: values['include-unverified'] === true,
    maxAttempts,
    json: values.json === true,
  };
}

const processSignals = (stop: () => void): (() => void) => {
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  return () => {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  };
};

export async function runListenCommand(argv: readonly string[], io: ListenIo): Promise<number> {
  let options: ParsedListen | 'help';
  try {
    options = parseListenArgs(argv, io.env);
  } catch (err: unknown) {
    if (!(err instanceof ListenUsageError)) throw err;
    io.err(`switchboard listen: ${err.message}\n\n${LISTEN_USAGE}`);
    return 2;
  }
  if (options === 'help') {
    io.out(LISTEN_USAGE);
    return 0;
  }
  // Loaded here so that --help and bad flags answer at once.
  const [{ createServerClient }, { listen, ListenFatalError }, { createPrinter }, { checkpointPath }] =
    await Promise.all([
      import('../listen/server-client.ts'),
      import('../listen/listener.ts'),
      import('../listen/listen-output.ts'),
      import('../listen/checkpoint.ts'),
    ]);
  const printer = createPrinter({
    json: options.json,
    colour: io.isTty && io.env.NO_COLOR === undefined,
    out: io.out,
    err: io.err,
  });
  const stopping = new AbortController();
  const unwatch = (io.onStop ?? processSignals)(() => stopping.abort());
  const client = createServerClient({ baseUrl: options.server, token: options.token, signal: stopping.signal });
  try {
    await listen({
      client,
      server: options.server,
      target: options.target,
      providers: options.providers,
      eventTypes: options.eventTypes,
      signSecret: options.signSecret,
      since: options.since,
      includeUnverified: options.includeUnverified,
      maxAttempts: options.maxAttempts,
      printer,
      checkpointFile: checkpointPath(
        { server: options.server, providers: options.providers, eventTypes: options.eventTypes },
        io.env,
        io.env.HOME ?? homedir(),
      ),
      signal: stopping.signal,
    });
    return 0;
  } catch (err: unknown) {
    if (err instanceof ListenFatalError) {
      io.err(`switchboard listen: ${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    unwatch();
    await client.close();
  }
}
