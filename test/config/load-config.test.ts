import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { PRESET_NAMES } from '../../generated/constants.ts';
import { ConfigError } from '../../src/config/config-error.ts';
import { findConfigPath, loadConfig, parseConfig } from '../../src/config/load-config.ts';

const EXAMPLE = `
providers:
  github:   { preset: github, secret: "\${GITHUB_WEBHOOK_SECRET}" }
  stripe:   { preset: stripe, secret: "\${STRIPE_WEBHOOK_SECRET}" }
  deploys:  { trust_mode: token, token: "\${DEPLOY_HOOK_TOKEN}" }
  sandbox:  { trust_mode: open }
  jobs:     { family: queue, channel: jobs.events }
replay:
  default_target: http://127.0.0.1:3000/webhooks
`;

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('config file', () => {
  it('reads the documented example with secrets from the environment', () => {
    const config = parseConfig(EXAMPLE, { GITHUB_WEBHOOK_SECRET: 'gh-secret', DEPLOY_HOOK_TOKEN: 'tok' });
    const byName = Object.fromEntries(config.providers.map((p) => [p.name, p]));
    expect(byName.github).toMatchObject({
      family: 'webhook',
      presetName: 'github',
      trustMode: 'signed',
      route: '/hooks/github',
      secrets: ['gh-secret'],
    });
    // An unset variable leaves the secret missing rather than refusing to start.
    expect(byName.stripe).toMatchObject({ trustMode: 'signed', secrets: [] });
    expect(byName.deploys).toMatchObject({ presetName: 'token', trustMode: 'token', secrets: ['tok'] });
    expect(byName.sandbox).toMatchObject({ presetName: 'open', trustMode: 'open', secrets: [] });
    expect(byName.jobs).toMatchObject({ family: 'queue', trustMode: 'queue', channel: 'jobs.events', mode: 'pubsub' });
    expect(config.replay.defaultTarget).toBe('http://127.0.0.1:3000/webhooks');
    expect(byName.github).toMatchObject({ maxBodyBytes: 5 * 1024 * 1024, toleranceSeconds: 300, recordRejected: true });
  });

  it('interpolates defaults and literal dollars', () => {
    const config = parseConfig('providers:\n  a: { preset: github, secret: ["${X:-fallback}", "$${Y}"] }\n', {});
    expect(config.providers[0]).toMatchObject({ secrets: ['fallback', '${Y}'] });
    // Neither a default nor a literal dollar is an unset variable.
    expect(config.unsetVariables).toEqual([]);
  });

  it('names the key and the problem for schema errors', () => {
    expect(errorOf(() => parseConfig('providers:\n  github: { preset: gh }\n', {}))).toMatch(
      /providers\.github\.preset: must be one of/,
    );
    expect(errorOf(() => parseConfig('providers:\n  github: { preset: github, scret: x }\n', {}))).toMatch(
      /providers\.github\.scret: unknown field/,
    );
    expect(errorOf(() => parseConfig('replay:\n  timeout_ms: 5\n', {}))).toMatch(/replay\.timeout_ms: must be >= 100/);
    expect(errorOf(() => parseConfig('providers:\n  "Bad Name": { trust_mode: open }\n', {}))).toMatch(/providers/);
  });

  it('says "did you mean" for a mistyped key or preset, from the contract\'s own names', () => {
    const preset = errorOf(() => parseConfig('providers:\n  sms: { preset: twillio, secret: s }\n', {}));
    expect(preset).toBe(
      `invalid config:\n  providers.sms.preset: not one of the ${PRESET_NAMES.length} allowed values; did you mean "twilio"?`,
    );
    // Keys at every depth: the top, a section, a provider, a provider's sub-section, a forward rule.
    for (const [yaml, line] of [
      ['servr: {}\n', 'servr: unknown field; did you mean "server"?'],
      ['server: { prot: 9000 }\n', 'server.prot: unknown field; did you mean "port"?'],
      [
        'providers:\n  g: { preset: github, secrett: x }\n',
        'providers.g.secrett: unknown field; did you mean "secret"?',
      ],
      [
        'providers:\n  g: { preset: github, secret: x, replay: { resgin: true } }\n',
        'providers.g.replay.resgin: unknown field; did you mean "resign"?',
      ],
      [
        'forward:\n  app: { to: "http://127.0.0.1:3000/", provders: [g] }\n',
        'forward.app.provders: unknown field; did you mean "providers"?',
      ],
    ]) {
      expect(errorOf(() => parseConfig(yaml ?? '', {}))).toBe(`invalid config:\n  ${line}`);
    }
    // Nothing near: the key alone, and every allowed value as before.
    expect(errorOf(() => parseConfig('zebra: 1\n', {}))).toBe('invalid config:\n  zebra: unknown field');
    expect(errorOf(() => parseConfig('providers:\n  x: { preset: qqqqqqqq }\n', {}))).toContain(
      PRESET_NAMES.map((name) => JSON.stringify(name)).join(', '),
    );
  });

  it('names the key for rules the schema cannot express', () => {
    expect(errorOf(() => parseConfig('providers:\n  a: { preset: github, trust_mode: open }\n', {}))).toMatch(
      /providers\.a\.trust_mode: preset github is signed/,
    );
    expect(errorOf(() => parseConfig('providers:\n  a: { family: queue }\n', {}))).toMatch(
      /providers\.a\.channel: required/,
    );
    expect(errorOf(() => parseConfig('providers:\n  a: { trust_mode: signed }\n', {}))).toMatch(/providers\.a\.preset/);
    expect(errorOf(() => parseConfig('providers:\n  a: { preset: generic-hmac }\n', {}))).toMatch(/providers\.a\.hmac/);
    expect(
      errorOf(() =>
        parseConfig('providers:\n  a: { trust_mode: open, route: /x }\n  b: { trust_mode: open, route: /x }\n', {}),
      ),
    ).toMatch(/providers\.b\.route: \/x is already used by a/);
    expect(errorOf(() => parseConfig('providers:\n  a: { trust_mode: open, route: /mcp }\n', {}))).toMatch(/reserved/);
    expect(errorOf(() => parseConfig('providers:\n  a: { preset: github, token: t }\n', {}))).toMatch(
      /providers\.a\.token/,
    );
    expect(
      errorOf(() =>
        parseConfig(
          'providers:\n  a: { preset: generic-hmac, secret: s, hmac: { header: X-Sig, signed: "{timestamp}" } }\n',
          {},
        ),
      ),
    ).toMatch(/^providers\.a\.hmac\./);
  });

  it('refuses the keys of the other family, as the schema says', () => {
    for (const key of ['channel: x', 'mode: streams', 'pattern: true', 'group: g']) {
      expect(errorOf(() => parseConfig(`providers:\n  a: { trust_mode: open, ${key} }\n`, {}))).toContain(
        `providers.a.${key.split(':')[0]}: not allowed here`,
      );
    }
    for (const key of ['preset: github', 'secret: s', 'token: t', 'route: /q', 'hmac: { header: X-Sig }']) {
      expect(errorOf(() => parseConfig(`providers:\n  q: { family: queue, channel: jobs, ${key} }\n`, {}))).toContain(
        `providers.q.${key.split(':')[0]}: not allowed here`,
      );
    }
  });

  it('hands the code every section camelCased, and the names the user chose as written', () => {
    const config = parseConfig(
      [
        'providers:',
        '  my_app: { trust_mode: open }',
        'forward:',
        '  local_app: { to: "http://127.0.0.1:3000/hooks", include_unverified: true, backoff: { initial_ms: 5 } }',
        'mcp: { max_sessions_per_caller: 3 }',
        'rate_limits: { replay: { refill_per_second: 2 } }',
        'retention: { max_age: 7d }',
      ].join('\n'),
      {},
    );
    expect(config.providers.map((p) => p.name)).toEqual(['my_app']);
    expect(config.forward[0]).toMatchObject({
      name: 'local_app',
      includeUnverified: true,
      backoff: { initialMs: 5, maxMs: 600_000 },
    });
    expect(config.mcp.maxSessionsPerCaller).toBe(3);
    expect(config.rateLimits.replay).toEqual({ capacity: 10, refillPerSecond: 2 });
    expect(config.server).toMatchObject({ host: '127.0.0.1', port: 8080, allowedHosts: [], trustProxy: false });
    // Handed to the retention job as written.
    expect(config.retention).toEqual({ max_age: '7d', interval_seconds: 3600 });
  });

  it('reads the example config the README points to: a sandbox to try, and GitHub from the environment', async () => {
    const text = await readFile(join(import.meta.dirname, '../../switchboard.example.yaml'), 'utf8');
    const config = parseConfig(text, {});
    expect(config.providers.map((p) => [p.name, p.trustMode])).toEqual([
      ['sandbox', 'open'],
      ['github', 'signed'],
    ]);
    expect(config.unsetVariables).toEqual([{ variable: 'GITHUB_WEBHOOK_SECRET', key: 'providers.github.secret' }]);
    expect(parseConfig(text, { GITHUB_WEBHOOK_SECRET: 'dev' }).unsetVariables).toEqual([]);
  });

  it('reports invalid YAML without a stack trace', () => {
    const message = errorOf(() => parseConfig('providers: [unclosed\n', {}));
    expect(message).toMatch(/^invalid YAML/);
    expect(message).not.toMatch(/\n\s+at /);
  });

  it('shows the line of a YAML error with a caret under the column, not a dangling colon', () => {
    const text =
      'providers:\n  github: { preset: github }\n  sandbox: { trust_mode: open }\n  github: { preset: stripe }\n';
    expect(errorOf(() => parseConfig(text, {}))).toBe(
      'invalid YAML: Map keys must be unique at line 4, column 3:\n\n' +
        '      sandbox: { trust_mode: open }\n' +
        '      github: { preset: stripe }\n' +
        '      ^',
    );
    const unclosed = errorOf(() => parseConfig('server:\n  port: [9000\nproviders: {}\n', {}));
    expect(unclosed).toMatch(/ at line 3, column 1:\n\n {6}port: \[9000\n {4}providers: \{\}\n {4}\^$/);
  });

  it('refuses a list or mapping used as a key, naming its line, without a process warning', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    try {
      expect(errorOf(() => parseConfig('providers:\n  ? [a, b]\n  : { trust_mode: open }\n', {}))).toBe(
        'invalid YAML: a key must be a plain value, not a list or mapping (line 2)',
      );
      expect(errorOf(() => parseConfig('{ { a: 1 }: 2 }\n', {}))).toMatch(/^invalid YAML: a key must be a plain value/);
      // Node emits process warnings on a later tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).toEqual([]);
  });

  it('rejects a malformed placeholder', () => {
    expect(errorOf(() => parseConfig('providers:\n  a: { preset: github, secret: "${1BAD}" }\n', {}))).toMatch(
      /providers\.a\.secret: malformed/,
    );
  });

  it('finds the file from --config, SWITCHBOARD_CONFIG, then ./switchboard.yaml', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sb-config-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    expect(findConfigPath({ env: {}, cwd: dir })).toBeNull();
    await writeFile(join(dir, 'switchboard.yaml'), 'providers:\n  s: { trust_mode: open }\n');
    await writeFile(join(dir, 'other.yaml'), 'providers:\n  o: { trust_mode: open }\n');
    expect(findConfigPath({ env: {}, cwd: dir })).toBe(join(dir, 'switchboard.yaml'));
    expect(findConfigPath({ env: { SWITCHBOARD_CONFIG: 'other.yaml' }, cwd: dir })).toBe(join(dir, 'other.yaml'));
    expect(
      loadConfig({ flagPath: 'other.yaml', env: { SWITCHBOARD_CONFIG: 'switchboard.yaml' }, cwd: dir }).providers[0]
        ?.name,
    ).toBe('o');
    expect(errorOf(() => findConfigPath({ flagPath: 'missing.yaml', env: {}, cwd: dir }))).toMatch(/does not exist/);
  });
});
