import { InternalError } from '../errors/internal-error.ts';

/** A problem with the config file. The CLI prints the message and exits 2, never a stack trace. */
export class ConfigError extends InternalError {
  readonly code = 'SB_ERR_CONFIG';
}
