/** The config tests' one way to read a refusal: parseConfig must throw a ConfigError, whose message is answered. */
import { expect } from 'vitest';
import { ConfigError } from '../../src/config/config-error.ts';
import { parseConfig } from '../../src/config/load-config.ts';

export function errorOf(text: string): string {
  try {
    parseConfig(text, {});
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}
