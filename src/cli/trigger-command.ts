/**
 * `switchboard trigger <provider> [sample]`: sends a provider's sample, signed with its configured
 * secret, to a running switchboard, and says where it tried when nothing answered.
 */
import { AppError } from '../errors/app-error.ts';
import type { CliIo } from './cli-io.ts';
import type { ParsedCommandLine } from './command-line.ts';
import { commandHint } from './invocation.ts';

export async function runTriggerCommand(parsed: ParsedCommandLine, io: CliIo): Promise<number> {
  const [providerName = '', sample] = parsed.positionals;
  const baseUrl = parsed.values.url as string | undefined;
  const [{ loadConfig }, { triggerSample, TriggerUnreachableError }] = await Promise.all([
    import('../config/load-config.ts'),
    import('../trigger/trigger-sample.ts'),
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
  try {
    const result = await triggerSample({ provider, sample, baseUrl });
    io.out(`${result.sample} → ${result.url}: ${result.status} ${result.body}\n`);
    return result.status >= 200 && result.status < 300 ? 0 : 1;
  } catch (err) {
    if (err instanceof TriggerUnreachableError) {
      const next =
        baseUrl === undefined
          ? `Is it running? Start it with \`${commandHint('serve')}\`, or pass --url BASE_URL where it listens.`
          : 'Check that --url names a running switchboard.';
      io.err(`switchboard: ${err.message}. ${next}\n`);
      return 1;
    }
    if (err instanceof AppError) {
      io.err(`switchboard: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}
