/**
 * `switchboard listen <server-url> --forward-to <url> [...]`: parses the flags (bad ones exit 2
 * with the usage), runs the listener until Ctrl-C or SIGTERM, and exits 0 after the summary line,
 * or 1 at once, with one line saying why, when it cannot go on (a refused token, an answer it
 * cannot use).
 *
 * The token and the signing secret come from the environment or a file: a flag's value shows in
 * `ps` and in shell history. The bare --token and --sign-secret still work, with a warning.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { parseArgs } from 'node:util';
import { escapeForTerminal } from '../shared/terminal-text.ts';
import { isEventId } from '../shared/event-id.ts';
import { LISTEN_USAGE } from './help-text.ts';
import { UsageError } from './command-line.ts';

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

class ListenUsageError extends UsageError {
  constructor(message: string) {
    super(message, 'listen');
  }
}

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
    throw new ListenUsageError(`${flag}: put no credentials in the URL (set SWITCHBOARD_TOKEN or use --token-file)`);
  return url.href;
}

interface ParsedListen {
  server: string;
  target: string;
  token: string;
  providers: string[];
  eventTypes: string[];
  signSecret: string | undefined;
  signForTarget: boolean;
  since: string | undefined;
  includeUnverified: boolean;
  maxAttempts: number;
  reply: boolean;
  json: boolean;
  /** Flags given in a form that leaks (--token, --sign-secret): a warning each. */
  warnings: string[];
}

/** A secret's one line in a file (a trailing newline, as `echo` or an editor leaves it, is not part of it). */
function readSecretFile(path: string, flag: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err: unknown) {
    const why = err instanceof Error && 'code' in err ? String(err.code) : String(err);
    throw new ListenUsageError(`${flag}: cannot read ${path} (${why})`);
  }
  const value = text.replace(/\r?\n$/, '');
  if (value === '') throw new ListenUsageError(`${flag}: ${path} is empty`);
  return value;
}

/**
 * A secret from its flag, its file flag or its environment variable, in that order; at most one
 * of the two flags. The bare flag works but warns: its value is visible to every user in `ps`.
 */
function secretFrom(
  sources: { flag: string | undefined; file: string | undefined; env: string | undefined },
  names: { flag: string; file: string; env: string },
  warnings: string[],
): string | undefined {
  if (sources.flag !== undefined && sources.file !== undefined)
    throw new ListenUsageError(`--${names.flag}: give it or --${names.file}, not both`);
  if (sources.file !== undefined) return readSecretFile(sources.file, `--${names.file}`);
  if (sources.flag !== undefined) {
    if (sources.flag === '') throw new ListenUsageError(`--${names.flag}: empty`);
    warnings.push(`--${names.flag} shows in ps and in your shell history; use ${names.env} or --${names.file}`);
    return sources.flag;
  }
  return sources.env === '' ? undefined : sources.env;
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
        'token-file': { type: 'string' },
        provider: { type: 'string', multiple: true },
        'event-type': { type: 'string', multiple: true },
        'sign-secret': { type: 'string' },
        'sign-secret-file': { type: 'string' },
        'sign-for-target': { type: 'boolean' },
        since: { type: 'string' },
        'include-unverified': { type: 'boolean' },
        'max-attempts': { type: 'string' },
        reply: { type: 'boolean' },
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
  const warnings: string[] = [];
  const token = secretFrom(
    { flag: values.token, file: values['token-file'], env: env.SWITCHBOARD_TOKEN },
    { flag: 'token', file: 'token-file', env: 'SWITCHBOARD_TOKEN' },
    warnings,
  );
  if (token === undefined) throw new ListenUsageError('--token-file: give it, or set SWITCHBOARD_TOKEN');
  const signSecret = secretFrom(
    { flag: values['sign-secret'], file: values['sign-secret-file'], env: env.SWITCHBOARD_SIGN_SECRET },
    { flag: 'sign-secret', file: 'sign-secret-file', env: 'SWITCHBOARD_SIGN_SECRET' },
    warnings,
  );
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
    signForTarget: values['sign-for-target'] === true,
    since,
    includeUnverified: values['include-unverified'] === true,
    maxAttempts,
    reply: values.reply === true,
    json: values.json === true,
    warnings,
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
    io.err(`switchboard listen: ${escapeForTerminal(err.message)}\n\n${LISTEN_USAGE}`);
    return 2;
  }
  if (options === 'help') {
    io.out(LISTEN_USAGE);
    return 0;
  }
  // Loaded here so that --help and bad flags answer at once.
  const [{ createServerClient }, { listen }, { createPrinter }, { checkpointPath }] = await Promise.all([
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
  for (const message of options.warnings) printer.print({ type: 'warning', message });
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
      signForTarget: options.signForTarget,
      since: options.since,
      includeUnverified: options.includeUnverified,
      maxAttempts: options.maxAttempts,
      reply: options.reply,
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
    // Whatever stopped it (a refused token, an answer listen cannot use, a checkpoint it cannot
    // write): one line, escaped, since a server's message may carry a delivery's bytes.
    const message = err instanceof Error ? err.message : String(err);
    io.err(`switchboard listen: ${escapeForTerminal(message)}\n`);
    return 1;
  } finally {
    unwatch();
    await client.close();
  }
}
