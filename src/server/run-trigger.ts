import type { ResolvedConfig } from '../config/resolve-config.ts';
import { AppError } from '../errors/app-error.ts';
import { describeTriggerResult } from '../trigger/trigger-output.ts';
import { triggerSample } from '../trigger/trigger-sample.ts';

export async function runTrigger(options: {
  config: ResolvedConfig;
  provider: string;
  sample: string | undefined;
  baseUrl: string | undefined;
  out: (text: string) => void;
  err: (text: string) => void;
}): Promise<number> {
  const provider = options.config.providers.find((p) => p.name === options.provider);
  if (provider === undefined) {
    const names = options.config.providers.map((p) => p.name).join(', ') || 'none configured';
    options.err(`switchboard: no provider named ${JSON.stringify(options.provider)} (providers: ${names})\n`);
    return 2;
  }
  try {
    const result = await triggerSample({ provider, sample: options.sample, baseUrl: options.baseUrl });
    options.out(describeTriggerResult(result));
    return result.status >= 200 && result.status < 300 ? 0 : 1;
  } catch (err) {
    if (err instanceof AppError) {
      options.err(`switchboard: ${err.message}\n`);
      return 2;
    }
    options.err(`switchboard: could not reach switchboard: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
