/**
 * The config keys that shape a scheme (token_header, hmac) are facts of the catalog entry and its
 * engine, not of a preset's name: the token entry says its header is configurable, the
 * configured-hmac engine needs `hmac`. Every other preset refuses both, naming who takes them.
 */
import { describe, expect, it } from 'vitest';
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import { PRESET_NAMES } from '../../generated/constants.ts';
import { presetOptionProblem } from '../../src/verify/preset-options.ts';

const hmac = {
  header: 'X-Sig',
  algorithm: 'sha256',
  encoding: 'hex',
  signed: '{body}',
  timestamp_format: 'unix',
  secret_encoding: 'utf8',
} as const;

describe('scheme options by catalog entry', () => {
  it('lets the token preset name its header, and no other token entry (gitlab, telegram)', () => {
    expect(presetOptionProblem('token', { token: 't', token_header: 'X-Mine' })).toBeNull();
    for (const name of ['gitlab', 'telegram', 'github'] as const) {
      expect(presetOptionProblem(name, { token_header: 'X-Mine' })).toEqual({
        key: 'token_header',
        message: `only the token preset takes token_header, not ${name}`,
      });
    }
  });

  it('needs hmac on generic-hmac and refuses it everywhere else', () => {
    expect(presetOptionProblem('generic-hmac', { secret: 's' })).toEqual({
      key: 'hmac',
      message: 'the generic-hmac preset needs hmac.header (and algorithm, encoding)',
    });
    expect(presetOptionProblem('generic-hmac', { secret: 's', hmac })).toBeNull();
    expect(presetOptionProblem('stripe', { secret: 's', hmac })).toEqual({
      key: 'hmac',
      message: 'only the generic-hmac preset takes hmac, not stripe',
    });
  });

  it('reads who takes token_header from the entry: a token entry marked configurable_header', () => {
    const configurable = PRESET_NAMES.filter((name) => {
      const { scheme } = PROVIDER_CATALOG[name];
      return 'configurable_header' in scheme && scheme.configurable_header === true;
    });
    expect(configurable).toEqual(['token']);
  });
});
