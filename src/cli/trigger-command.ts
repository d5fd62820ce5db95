/**
 * `switchboard trigger <provider> [sample]`: sends a provider's sample, signed with its configured
 * secret, to a running switchboard, and says where it tried when nothing answered. Without --url it
 * posts where `serve` listens with the same config and environment (listen-address.ts).
 */
import { AppError } from '../errors/app-error.ts';
import { describeTriggerResult } from '../trigger/trigger-output.ts';
import type { CliIo } from './cli-io.ts';
import { UsageError, type ParsedCommandLine } from './command-line.ts';
import { commandHint } from './invocation.ts';
import { givenPorts, listenAddress, type ListenAddress } from './listen-address.ts';

/** Why the URL is the one it is, when it is not --url: `port from PORT`. */
function portNote(address: ListenAddress, configPath: string | null): string {
  if (address.portFrom === 'server.port') return `port from server.port in ${configPath ?? 'the config'}`;
  if (address.portFrom === 'PORT') return 'port from PORT';
  return 'the default port';
}

export async function runTriggerCommand(parsed: ParsedCommandLine, io: CliIo): Promise<number> {
  const [providerName = '', sample] = parsed.positionals;
  const flagUrl = parsed.values.url as string | undefined;
  const ports = givenPorts(undefined, io.env, 'trigger');
  const [{ loadConfig }, { unsetPlaceholdersOf }, { triggerSample, TriggerUnreachableError }, { urlHost }] =
    await Promise.all([
      import('../config/load-config.ts'),
      import('../config/interpolate-env.ts'),
      import('../trigger/trigger-sample.ts'),
      import('../http/http-server.ts'),
    ]);
  const flagPath = parsed.values.config as string | undefined;
  const config = loadConfig({ flagPath, env: io.env, cwd: process.cwd() });
  const provider = config.providers.find((p) => p.name === providerName);
  if (provider === undefined) {
    const names = config.providers.map((p) => p.name).join(', ') || 'none configured';
    const where = config.path ?? 'no config file (--config, SWITCHBOARD_CONFIG or ./switchboard.yaml)';
    io.err(`switchboard: no provider named ${JSON.stringify(providerName)} in ${where} (providers: ${names})\n`);
    return 2;
  }
  const address = listenAddress({ ports, server: config.server });
  if (flagUrl === undefined && address.port === 0) {
    throw new UsageError(
      `serve listens on a free port of its choosing (port 0, ${address.portFrom}); pass --url with the address it printed`,
      'trigger',
    );
  }
  const baseUrl = flagUrl ?? `http://${urlHost(address.host)}:${address.port}`;
  const note = flagUrl === undefined ? portNote(address, config.path) : undefined;
  try {
    const result = await triggerSample({
      provider,
      sample,
      baseUrl,
      unsetPlaceholders: unsetPlaceholdersOf(provider.name, config.unsetVariables),
    });
    io.out(describeTriggerResult(result, note));
    return result.status >= 200 && result.status < 300 ? 0 : 1;
  } catch (err) {
    if (err instanceof TriggerUnreachableError) {
      const next =
        flagUrl === undefined
          ? `Is it running? Start it with \`${commandHint('serve')}\`, or pass --url BASE_URL where it listens.`
          : 'Check that --url names a running switchboard.';
      io.err(`switchboard: ${err.message}${note === undefined ? '' : ` (${note})`}. ${next}\n`);
      return 1;
    }
    if (err instanceof AppError) {
      io.err(`switchboard: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}
