import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/config-error.ts';
import type { ResolvedConfig } from '../config/resolve-config.ts';
import type { Logger, LoggerOptions } from '../log/logger.ts';
import { HELP_TEXT } from './help-text.ts';

/** Exit codes: 0 done, 1 runtime failure, 2 bad usage or bad config. */
const EXIT_USAGE = 2;

class UsageError extends Error {}

interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
}

const defaultIo: Io = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

function parsePort(raw: string | undefined, what: string): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) > 65535)
    throw new UsageError(`${what}: ${JSON.stringify(raw)} is not a port number`);
  return Number(raw);
}

/**
 * The config loader (with its compiled validators) and the logger are loaded by the commands that
 * use them, so that --help and --version start in a fraction of the time.
 */
async function readConfig(flagPath: string | undefined): Promise<ResolvedConfig> {
  const { loadConfig } = await import('../config/load-config.ts');
  return loadConfig({ flagPath, env: process.env, cwd: process.cwd() });
}

async function newLogger(options?: LoggerOptions): Promise<Logger> {
  const { createLogger } = await import('../log/logger.ts');
  return createLogger(options);
}

export async function main(argv: readonly string[], io: Io = defaultIo): Promise<number> {
  let logger: Logger | undefined;
  if (argv[0] === 'listen') {
    // listen has flags of its own (repeatable filters); it parses them itself.
    const { runListenCommand } = await import('./listen-command.ts');
    return runListenCommand(argv.slice(1), {
      out: io.out,
      err: io.err,
      env: process.env,
      isTty: process.stdout.isTTY,
    });
  }
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        config: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        url: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
    if (values.help) {
      io.out(HELP_TEXT);
      return 0;
    }
    if (values.version) {
      io.out(`${version()}\n`);
      return 0;
    }
    const [command = 'serve', ...rest] = positionals;
    switch (command) {
      case 'serve': {
        if (rest.length > 0) throw new UsageError(`serve takes no arguments (got ${rest.join(' ')})`);
        const config = await readConfig(values.config);
        logger = await newLogger();
        const { runServer } = await import('../server/run-server.ts');
        return await runServer({
          config,
          logger,
          // The config's own values are the schema's defaults unless the file sets them.
          host: values.host ?? config.server.host,
          port: parsePort(values.port, '--port') ?? parsePort(process.env.PORT, 'PORT') ?? config.server.port,
          out: io.out,
        });
      }
      case 'migrate': {
        const config = await readConfig(values.config);
        logger = await newLogger();
        const { runMigrate } = await import('../server/run-server.ts');
        await runMigrate({ config, logger, out: io.out });
        return 0;
      }
      case 'token': {
        const [action, name, ...extra] = rest;
        if (extra.length > 0) throw new UsageError('token takes: create <name> | list | revoke <name>');
        logger = await newLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
        const { runTokenCommand } = await import('../server/run-server.ts');
        return await runTokenCommand({ action, name, logger, out: io.out, err: io.err });
      }
      case 'trigger': {
        const [provider, sample, ...extra] = rest;
        if (provider === undefined || extra.length > 0)
          throw new UsageError('usage: switchboard trigger <provider> [sample]');
        const config = await readConfig(values.config);
        const { runTrigger } = await import('../server/run-trigger.ts');
        return await runTrigger({ config, provider, sample, baseUrl: values.url, out: io.out, err: io.err });
      }
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}; see switchboard --help`);
    }
  } catch (err: unknown) {
    if (err instanceof ConfigError) {
      io.err(`switchboard: ${err.message}\n`);
      return EXIT_USAGE;
    }
    if (
      err instanceof UsageError ||
      (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))
    ) {
      io.err(`switchboard: ${err.message}\n`);
      return EXIT_USAGE;
    }
    if (logger) logger.fatal({ err }, 'switchboard stopped on an error');
    io.err(`switchboard: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
