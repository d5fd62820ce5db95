/**
 * The command line: picks the command, checks its arguments against the command table
 * (commands.ts) and only then loads what the command runs. A usage error is answered before any
 * module of the server, the config validators or the database is loaded.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/config-error.ts';
import { didYouMean } from '../shared/did-you-mean.ts';
import { EXIT_USAGE, parseCommandLine, UsageError } from './command-line.ts';
import { commandNamed, COMMANDS } from './commands.ts';
import { commandHelp, generalHelp } from './help-text.ts';
import { commandHint } from './invocation.ts';
import { exitCodeOf, type CliIo } from './cli-io.ts';

const defaultIo: CliIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  env: process.env,
  stdinIsTty: process.stdin.isTTY === true,
  stdoutIsTty: process.stdout.isTTY === true,
  stderrIsTty: process.stderr.isTTY === true,
};

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** The command and its arguments: the first argument, unless it is an option (serve is the default). */
function splitCommand(argv: readonly string[]): { command: string; args: readonly string[] } {
  const [first, ...rest] = argv;
  if (first === undefined || first.startsWith('-')) return { command: 'serve', args: argv };
  return { command: first, args: rest };
}

async function runCommand(command: string, args: readonly string[], io: CliIo): Promise<number> {
  const spec = commandNamed(command);
  if (spec === undefined) {
    const names = COMMANDS.map((c) => c.command);
    const guess = didYouMean(command, names);
    throw new UsageError(
      `unknown command ${JSON.stringify(command)}; ${guess === '' ? `the commands are ${names.join(', ')}` : guess}`,
    );
  }
  if (command === 'listen') {
    // listen has flags of its own (repeatable filters); it parses them itself.
    const { runListenCommand } = await import('./listen-command.ts');
    return runListenCommand(args, { out: io.out, err: io.err, env: io.env, isTty: io.stdoutIsTty });
  }
  const parsed = parseCommandLine(spec, args);
  if (parsed.help) {
    io.out(commandHelp(spec, commandHint('')));
    return 0;
  }
  switch (command) {
    case 'help': {
      const [topic] = parsed.positionals;
      if (topic === undefined) {
        io.out(generalHelp(commandHint('')));
        return 0;
      }
      const about = commandNamed(topic);
      if (about === undefined) {
        const guess = didYouMean(
          topic,
          COMMANDS.map((c) => c.command),
        );
        throw new UsageError(`no command named ${JSON.stringify(topic)}${guess === '' ? '' : `; ${guess}`}`, 'help');
      }
      if (topic === 'listen') {
        const { LISTEN_USAGE } = await import('./help-text.ts');
        io.out(LISTEN_USAGE);
      } else io.out(commandHelp(about, commandHint('')));
      return 0;
    }
    case 'serve':
      return (await import('./serve-command.ts')).runServeCommand(parsed, io);
    case 'init':
      return (await import('./init-command.ts')).runInitCommand(io);
    case 'migrate':
      return (await import('./serve-command.ts')).runMigrateCommand(parsed, io);
    case 'token':
      return (await import('./token-command.ts')).runTokenCommand(parsed, io);
    case 'trigger':
      return (await import('./trigger-command.ts')).runTriggerCommand(parsed, io);
    case 'data':
      return (await import('./data-command.ts')).runDataCommand(parsed, io);
    default:
      throw new Error(`command ${command} is in the table but has no handler`);
  }
}

/** Runs one command line. `given` replaces parts of the process's own io (tests pass out and err). */
export async function main(
  argv: readonly string[],
  given: Pick<CliIo, 'out' | 'err'> & Partial<CliIo> = defaultIo,
): Promise<number> {
  const io: CliIo = { ...defaultIo, ...given };
  try {
    if (argv[0] === '--help' || argv[0] === '-h') {
      io.out(generalHelp(commandHint('')));
      return 0;
    }
    if (argv[0] === '--version' || argv[0] === '-v') {
      io.out(`${version()}\n`);
      return 0;
    }
    const { command, args } = splitCommand(argv);
    return await runCommand(command, args, io);
  } catch (err: unknown) {
    if (err instanceof UsageError) {
      const help = commandHint(err.command === undefined ? '--help' : `${err.command} --help`);
      io.err(`switchboard: ${err.message}\nSee: ${help}\n`);
      return EXIT_USAGE;
    }
    if (err instanceof ConfigError) {
      io.err(`switchboard: ${err.message}\n`);
      return EXIT_USAGE;
    }
    // Reported once, here, in plain text. serve has also logged an unexpected one with its stack
    // (isOperatorError tells them apart); the message of an expected one is the whole story.
    io.err(`switchboard: ${err instanceof Error ? err.message : String(err)}\n`);
    return await exitCodeOf(err);
  }
}
