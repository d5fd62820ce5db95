/**
 * `switchboard serve` and `switchboard migrate`: flags and environment checked first, then the
 * config (unset ${VAR}s warned about, or refused with --strict), and only then the logger, the
 * database and the server. The start-up banner is printed once the server actually serves.
 */
import { ConfigError } from '../config/config-error.ts';
import type { UnsetVariable } from '../config/interpolate-env.ts';
import type { LoadedConfig } from '../config/load-config.ts';
import type { Logger } from '../log/logger.ts';
import { isOperatorError, type CliIo } from './cli-io.ts';
import { parseRole, type ParsedCommandLine } from './command-line.ts';
import { givenPorts, listenAddress } from './listen-address.ts';
import { commandHint } from './invocation.ts';

async function readConfig(flag: string | boolean | undefined, io: CliIo): Promise<LoadedConfig> {
  const { loadConfig } = await import('../config/load-config.ts');
  return loadConfig({ flagPath: typeof flag === 'string' ? flag : undefined, env: io.env, cwd: process.cwd() });
}

/** One entry per variable, with every key that uses it. */
function byVariable(unset: readonly UnsetVariable[]): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const { variable, key } of unset) found.set(variable, [...(found.get(variable) ?? []), key]);
  return found;
}

/** The lines --strict refuses with, or null when every ${VAR} is set. */
export function unsetVariableProblems(unset: readonly UnsetVariable[]): string[] {
  return [...byVariable(unset)].map(
    ([variable, keys]) => `\${${variable}} is not set (used by ${keys.join(', ')}); it reads as empty`,
  );
}

export async function runServeCommand(parsed: ParsedCommandLine, io: CliIo): Promise<number> {
  const { values } = parsed;
  const ports = givenPorts(values.port as string | undefined, io.env, 'serve');
  const flagRole = parseRole(values.role as string | undefined, 'serve');
  const loaded = await readConfig(values.config, io);
  const config = flagRole === undefined ? loaded : { ...loaded, server: { ...loaded.server, role: flagRole } };
  const strict = values.strict === true || config.server.strict;
  const problems = unsetVariableProblems(config.unsetVariables);
  if (strict && problems.length > 0) {
    const why = values.strict === true ? '--strict' : 'server.strict';
    throw new ConfigError(
      `${problems.join('\nswitchboard: ')}\nswitchboard: ${why} refuses to start with an unset variable`,
    );
  }
  const { createLogger } = await import('../log/logger.ts');
  const logger = createLogger({ pretty: io.stdoutIsTty });
  for (const [variable, keys] of byVariable(config.unsetVariables)) {
    logger.warn(
      { variable, keys },
      `\${${variable}} is not set, so ${keys.join(', ')} is empty; set it, or start with --strict to refuse`,
    );
  }
  const address = listenAddress({ ports, flagHost: values.host as string | undefined, server: config.server });
  try {
    const { runServer } = await import('../server/run-server.ts');
    const { startupBanner, firstTokenNotice } = await import('./startup-banner.ts');
    const token = await firstTokenNotice(io.env);
    return await runServer({
      config,
      logger,
      host: address.host,
      port: address.port,
      out: io.out,
      cliCommand: commandHint(''),
      // A person watching the terminal sees what arrives; logs read by a program stay as they are.
      ...(io.stdoutIsTty && values.quiet !== true
        ? { terminal: { out: io.out, colour: io.env.NO_COLOR === undefined } }
        : {}),
      // One write, so that whoever waits for the "listening on" line gets the whole banner with it.
      onStarted: async (running) =>
        io.out(startupBanner({ config, running }) + (await token.shown(running.initialToken))),
    }).catch(async (err: unknown) => {
      await token.failed();
      throw err;
    });
  } catch (err) {
    await logUnexpected(err, logger);
    throw err;
  }
}

/** An error without a message of its own for the operator is logged with its stack before main prints it. */
async function logUnexpected(err: unknown, logger: Logger): Promise<void> {
  if (err instanceof ConfigError || (await isOperatorError(err))) return;
  logger.fatal({ err }, 'switchboard stopped on an error');
}

export async function runMigrateCommand(parsed: ParsedCommandLine, io: CliIo): Promise<number> {
  const config = await readConfig(parsed.values.config, io);
  const { createLogger } = await import('../log/logger.ts');
  const logger = createLogger({ pretty: io.stdoutIsTty });
  const { runMigrate } = await import('../server/run-server.ts');
  try {
    await runMigrate({ config, logger, out: io.out });
  } catch (err) {
    await logUnexpected(err, logger);
    throw err;
  }
  return 0;
}
