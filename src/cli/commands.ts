/**
 * Every command of the CLI: its arguments, its one-line usage and what it does. help, --help and
 * the argument checks all read this table, so a command's help cannot drift from what it takes.
 */
import type { CommandLineSpec, OptionSpec } from './command-line.ts';

export interface CommandSpec extends CommandLineSpec {
  /** After `switchboard `, e.g. `token create <name> | token list | token revoke <name>`. */
  usage: string;
  summary: string;
  /** More lines for `switchboard help <command>`. */
  details?: string;
}

const CONFIG: OptionSpec = {
  type: 'string',
  value: 'PATH',
  description: 'The config file (else SWITCHBOARD_CONFIG, else ./switchboard.yaml if present).',
};

// Shape repeat by intent: the entries are alike because each is one command's data in the same
// fields; there is no logic in them to share.
export const COMMANDS: readonly CommandSpec[] = [
  {
    command: 'serve',
    usage: '[serve] [--config PATH] [--host HOST] [--port PORT] [--role all|ingest|worker] [--strict] [--quiet]',
    summary: 'Start the server (the default command). Host defaults to 127.0.0.1, port to $PORT or 8080.',
    details:
      'Prints where it listens, the providers and forward rules it serves, and the first API token on\n' +
      'the first start. On a terminal it then prints a line per event stored (time, provider, type, id,\n' +
      'trust, the status answered) and per forward attempt; --quiet leaves them out. An unset ${VAR}\n' +
      'in the config is warned about; --strict refuses to start instead.\n' +
      '--role splits the work between processes on one PostgreSQL: ingest serves webhooks, queue sources,\n' +
      '/api, /mcp and the UI; worker forwards, indexes for search and applies retention (docs/scaling.md).',
    options: {
      config: CONFIG,
      host: { type: 'string', value: 'HOST', description: 'Address to bind (overrides server.host).' },
      port: {
        type: 'string',
        value: 'PORT',
        description: 'Port to bind, 0 for any free one (overrides PORT and server.port).',
      },
      role: {
        type: 'string',
        value: 'all|ingest|worker',
        description: 'What this process runs (overrides server.role; default all).',
      },
      strict: {
        type: 'boolean',
        description: 'Exit 2 when the config uses an unset ${VAR} (as server.strict: true does).',
      },
      quiet: {
        type: 'boolean',
        description: 'On a terminal, print no line per event arriving or forwarded.',
      },
    },
    positionals: [],
  },
  {
    command: 'init',
    usage: 'init',
    summary:
      'Write an example switchboard.yaml (a sandbox and a GitHub provider) in the current directory, to start from; an existing one is left alone.',
    options: {},
    positionals: [],
  },
  {
    command: 'migrate',
    usage: 'migrate [--config PATH]',
    summary: 'Apply database migrations and exit.',
    options: { config: CONFIG },
    positionals: [],
  },
  {
    command: 'token',
    usage: 'token create <name> | token list | token revoke <name>',
    summary:
      'Manage the bearer tokens that MCP and the HTTP API accept; works while a server runs on the same data directory.',
    details:
      'create prints the new token once (only its hash is stored); list shows names and dates, never a token;\n' +
      'revoke ends one, and a running server stops accepting it within seconds. The first token, made on the\n' +
      'first start, is in .switchboard/token.',
    options: {},
    positionals: [
      { name: 'create|list|revoke', required: true },
      { name: 'name', required: false },
    ],
  },
  {
    command: 'trigger',
    usage: 'trigger <provider> [sample] [--url BASE_URL] [--config PATH]',
    summary:
      "Send a realistic sample event, signed with the provider's configured secret, to a running switchboard: where serve listens with the same config and environment (server.host; PORT, else server.port).",
    options: {
      url: {
        type: 'string',
        value: 'BASE_URL',
        description: 'The running switchboard (default: where serve would listen, as above).',
      },
      config: CONFIG,
    },
    positionals: [
      { name: 'provider', required: true },
      { name: 'sample', required: false },
    ],
  },
  {
    command: 'listen',
    usage: 'listen <server-url> --forward-to <url> [options]',
    summary:
      "Forward a remote switchboard's new events to a local app, exact bytes, nothing lost across disconnects and restarts.",
    // listen parses its own flags (repeatable filters): see listen-command.ts and LISTEN_USAGE.
    options: {},
    positionals: [],
  },
  {
    command: 'data',
    usage: 'data info | data rm [--yes]',
    summary:
      "Show where this project's data is (the data directory, and the embedded cluster if it lives elsewhere) and how big; rm removes it.",
    details:
      'rm asks before it deletes, unless --yes; it refuses while a server runs on the data directory. It removes\n' +
      'the embedded PostgreSQL cluster (every stored event) and its password, wherever the cluster lives; the\n' +
      'config and .switchboard/token stay. With DATABASE_URL nothing of that database is touched.',
    options: { yes: { type: 'boolean', short: 'y', description: 'Remove without asking.' } },
    positionals: [{ name: 'info|rm', required: true }],
  },
  {
    command: 'help',
    usage: 'help [command]',
    summary: 'This help, or one command in detail.',
    options: {},
    positionals: [{ name: 'command', required: false }],
  },
];

export function commandNamed(name: string): CommandSpec | undefined {
  return COMMANDS.find((c) => c.command === name);
}
