/**
 * Reads one command's arguments with node:util parseArgs, and puts every mistake into one plain
 * sentence that names the argument and points to the command's --help. parseArgs's own messages
 * advise about `--` for an unknown option, which is never what a user of these commands meant.
 * Nothing here is slow to load: usage errors are answered before any module of the server loads.
 */
import { parseArgs } from 'node:util';
import { SERVER_PORT, SERVER_ROLES } from '../../generated/constants.ts';
import type { ServerRole } from '../../generated/types.ts';
import { InternalError } from '../errors/internal-error.ts';

/** Exit codes: 0 done, 1 runtime failure, 2 bad usage or bad config. */
export const EXIT_USAGE = 2;

/** A mistake in the command line: printed with a pointer to --help, exit 2. */
export class UsageError extends InternalError {
  readonly code = 'SB_ERR_USAGE';
  /** The command whose --help to point to; undefined for the top level. */
  readonly command: string | undefined;

  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
  }
}

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** How the value is shown in help, e.g. PATH. */
  value?: string;
  description: string;
}

interface PositionalSpec {
  name: string;
  required: boolean;
}

export interface CommandLineSpec {
  command: string;
  options: Readonly<Record<string, OptionSpec>>;
  positionals: readonly PositionalSpec[];
}

export interface ParsedCommandLine {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
  /** --help was given: the caller prints the command's help and parses nothing else. */
  help: boolean;
}

const LENIENT = false;

/** Options every command takes. */
const HELP_OPTION: OptionSpec = { type: 'boolean', short: 'h', description: 'Show this help.' };

export function parseCommandLine(spec: CommandLineSpec, args: readonly string[]): ParsedCommandLine {
  const options: Readonly<Record<string, OptionSpec>> = { ...spec.options, help: HELP_OPTION };
  const { values, positionals, tokens } = parseArgs({
    args: [...args],
    options: Object.fromEntries(
      Object.entries(options).map(([name, o]) => [name, o.short === undefined ? { type: o.type } : o]),
    ),
    // Not strict: its errors would come in parseArgs's words; the tokens are checked below instead.
    strict: LENIENT,
    allowPositionals: true,
    tokens: true,
  });
  if (values.help === true) return { values: {}, positionals: [], help: true };
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const option = options[token.name];
    if (option === undefined) {
      throw new UsageError(`unknown option ${token.rawName}`, spec.command);
    }
    if (option.type === 'boolean' && token.value !== undefined) {
      throw new UsageError(`${token.rawName} takes no value`, spec.command);
    }
    // Without an inline value parseArgs takes the next argument, even another option.
    if (
      option.type === 'string' &&
      (token.value === undefined || (!token.inlineValue && token.value.startsWith('-')))
    ) {
      throw new UsageError(
        `${token.rawName} needs a value${option.value === undefined ? '' : ` (${option.value})`}`,
        spec.command,
      );
    }
  }
  const required = spec.positionals.filter((p) => p.required);
  if (positionals.length < required.length) {
    throw new UsageError(`missing <${required[positionals.length]?.name ?? 'argument'}>`, spec.command);
  }
  if (positionals.length > spec.positionals.length) {
    const extra = positionals.slice(spec.positionals.length).join(' ');
    throw new UsageError(`unexpected argument ${JSON.stringify(extra)}`, spec.command);
  }
  return { values: values, positionals, help: false };
}

/** A port number from a flag or the environment; undefined when not given. */
export function parsePort(raw: string | undefined, what: string, command: string): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const { minimum, maximum } = SERVER_PORT;
  if (!/^\d+$/.test(raw) || Number(raw) < minimum || Number(raw) > maximum) {
    throw new UsageError(`${what}: ${JSON.stringify(raw)} is not a port number (${minimum} to ${maximum})`, command);
  }
  return Number(raw);
}

/** A role from --role; undefined when not given. */
export function parseRole(raw: string | undefined, command: string): ServerRole | undefined {
  if (raw === undefined) return undefined;
  const role = SERVER_ROLES.find((r) => r === raw);
  if (role === undefined) {
    throw new UsageError(`--role: ${JSON.stringify(raw)} is not a role (${SERVER_ROLES.join(', ')})`, command);
  }
  return role;
}
