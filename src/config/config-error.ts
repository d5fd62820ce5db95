/** A problem with the config file. The CLI prints the message and exits 2, never a stack trace. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
