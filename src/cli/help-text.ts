import { COMMANDS, type CommandSpec } from './commands.ts';

const ENVIRONMENT = `Configuration:
  --config PATH, or SWITCHBOARD_CONFIG, or ./switchboard.yaml if present.
  DATABASE_URL                  PostgreSQL to use; without it an embedded PostgreSQL runs in the data dir.
  SWITCHBOARD_DATA_DIR          Data directory (default ./.switchboard).
  SWITCHBOARD_TOKEN             A static bearer token (identity "env").
  REDIS_URL                     Redis for queue providers (default redis://127.0.0.1:6379).
  SWITCHBOARD_DRAIN_TIMEOUT_MS  How long SIGTERM waits for in-flight requests before cutting
                                connections, in ms (0 to 600000; default 10000).
  LOG_LEVEL                     pino level (default info). Logs are one-line text on a terminal, JSON otherwise.

switchboard listen also reads:
  SWITCHBOARD_TOKEN             The token for the server listen follows (or --token-file).
  SWITCHBOARD_SIGN_SECRET       The secret to sign forwarded events with (or --sign-secret-file).
  XDG_STATE_HOME                Where checkpoints go (default $HOME/.local/state).
  NO_COLOR                      Set to print without colours on a terminal.
`;

/** Lines of `text` indented by `by` spaces. */
const indent = (text: string, by: number): string =>
  text
    .split('\n')
    .map((line) => `${' '.repeat(by)}${line}`)
    .join('\n');

/**
 * `switchboard --help`: every command with its usage and summary, then the environment.
 * `runAs` is how this process is run here (invocation.ts), e.g. `npm start --` in a clone.
 */
export function generalHelp(runAs: string): string {
  const commands = COMMANDS.map((c) => `  switchboard ${c.usage}\n${indent(c.summary, 6)}`).join('\n');
  return (
    'switchboard: receive, verify and store webhooks and queue messages; inspect and replay them over MCP.\n\n' +
    `Usage (run here as: ${runAs} <command> [options]):\n${commands}\n  switchboard --help | --version\n\n` +
    `${ENVIRONMENT}`
  );
}

/** `switchboard help <command>` and `switchboard <command> --help`. */
export function commandHelp(spec: CommandSpec, runAs: string): string {
  const options = Object.entries(spec.options).map(([name, o]) => {
    const flag = `${o.short === undefined ? '' : `-${o.short}, `}--${name}${o.value === undefined ? '' : ` ${o.value}`}`;
    return `  ${flag.padEnd(22)} ${o.description}`;
  });
  return (
    `Usage: switchboard ${spec.usage}\n  (run here as: ${runAs} ${spec.command} …)\n\n${spec.summary}\n` +
    (spec.details === undefined ? '' : `\n${spec.details}\n`) +
    `\nOptions:\n${[...options, `  ${'-h, --help'.padEnd(22)} This help.`].join('\n')}\n`
  );
}

export const LISTEN_USAGE = `Usage: switchboard listen <server-url> --forward-to <url> [options]

Follows a switchboard's event stream and POSTs each new event to <url> with its exact bytes and
the headers a replay carries. After a disconnect or a restart it first catches up, oldest first,
from the last event it handled, so nothing is lost and nothing is sent twice.

Options:
  --forward-to URL          Where to POST each event, e.g. http://localhost:3000/webhooks (required).
  --token-file PATH         Read the server's bearer token from PATH (else SWITCHBOARD_TOKEN).
  --provider NAME           Only this provider's events; repeat for more.
  --event-type TYPE         Only events of this type (without a dot, also its dotted sub-types); repeatable.
  --sign-secret-file PATH   Sign each event with the secret in PATH (else SWITCHBOARD_SIGN_SECRET),
                            as the event's provider preset signs (it is read as that provider's
                            secret in switchboard.yaml: whsec_… and all), or send it as the token of
                            a token provider. Without one events go unsigned.
  --sign-for-target         Presets that sign the URL they are called at (Twilio, Square, HubSpot,
                            Trello, QStash) sign for the --forward-to URL instead of the server's
                            public_url, so a stock check of the URL it was called at (Twilio's
                            twilio.webhook()) passes. Default: signed for public_url, as the
                            provider signed it.
  --since now|TIME|ID       Where to start: now, an RFC 3339 time, or after an event id. Default: the
                            checkpoint when it is under 24 hours old, else now.
  --include-unverified      Also forward events that failed their check on arrival (always unsigned).
  --max-attempts N          Attempts per event while the local app fails (default 5), with backoff.
  --reply                   Your app answers the providers that wait for it (reply: {from: listen}
                            in the server's config: Discord interactions, Slack commands, Twilio
                            TwiML): each such delivery is sent once, at once, and the app's status,
                            Content-Type and body go back to the provider. Its body is never printed.
  --json                    One JSON object per line instead of text.

Secrets never go on the command line, where ps and shell history show them: the environment, or
a file's one line (a trailing newline is dropped). Text output shows whatever came from the server
escaped (\x1b, \u202e); --json prints it exactly.

The checkpoint is $XDG_STATE_HOME/switchboard/listen-<hash>.json (default ~/.local/state), one per
server and filter set. Ctrl-C prints a summary and exits 0. Exit 1, with one line saying why:
listen cannot go on (the server refused the token, has no such provider, or gave an answer listen
cannot use). Exit 2: bad flags.
`;
