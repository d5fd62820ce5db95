import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createNetServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { NO_PROVIDERS_HINT } from '../../src/cli/startup-banner.ts';
import { createEmptyDatabase } from '../support/database.ts';
import { closedPort } from '../support/local-server.ts';
import { spawnSwitchboard } from '../support/spawn-switchboard.ts';
import { capture, childEnv, cliOutcome, tempDir } from './support/cli-process.ts';

const run = promisify(execFile);
const repo = join(import.meta.dirname, '../..');
const bin = join(repo, 'bin/switchboard.js');
const srcDir = join(repo, 'src');
/** The CLI as a process, from source (bin/switchboard.js runs the same entry compiled in dist/). */
const cli = (args: string[], env: NodeJS.ProcessEnv = process.env) =>
  run(process.execPath, ['--import', 'tsx', join(srcDir, 'cli/entry.ts'), ...args], { cwd: repo, env });

describe('switchboard CLI', () => {
  it('prints help when run as a process', async () => {
    const { stdout } = await cli(['--help']);
    expect(stdout).toContain('switchboard [serve] [--config PATH] [--host HOST] [--port PORT]');
    expect(stdout).toContain('token create <name>');
    expect(stdout).toContain('trigger <provider> [sample]');
  });

  it('help lists every environment variable the server reads', async () => {
    const c = capture();
    expect(await main(['--help'], c.io)).toBe(0);
    // Grepped from src rather than listed here, so a variable added later cannot be missed. NODE_ENV
    // is the UI build script's, not the server's; PATH and TZ are only handed on to PostgreSQL.
    const sources = (await readdir(srcDir, { recursive: true })).filter((f) => f.endsWith('.ts'));
    const read = new Set<string>();
    for (const file of sources) {
      const text = await readFile(join(srcDir, file), 'utf8');
      for (const m of text.matchAll(/\benv(?:\?\.|\.|\[['"])([A-Z][A-Z0-9_]+)/g))
        if (!['NODE_ENV', 'PATH', 'TZ'].includes(m[1] ?? '')) read.add(m[1] ?? '');
    }
    expect([...read]).toEqual(
      expect.arrayContaining(['DATABASE_URL', 'SWITCHBOARD_DRAIN_TIMEOUT_MS', 'SWITCHBOARD_TOKEN']),
    );
    for (const name of read) expect(c.out(), name).toMatch(new RegExp(`\\b${name}\\b`));
    expect(c.out()).toMatch(/^ {2}SWITCHBOARD_DRAIN_TIMEOUT_MS +How long SIGTERM waits/m);
  });

  it('prints the package version', async () => {
    const c = capture();
    expect(await main(['--version'], c.io)).toBe(0);
    expect(c.out()).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it('exits 2 naming the key for a bad config, without a stack trace', async () => {
    const dir = await tempDir('sb-cli-');
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'providers:\n  github: { preset: github, secrett: x }\n');
    const failure = await cli(['serve', '--config', file]).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(failure?.code).toBe(2);
    expect(failure?.stderr).toContain('providers.github.secrett: unknown field');
    expect(failure?.stderr).not.toMatch(/\n\s+at /);
  });

  it('exits 2 when the config file named by --config does not exist', async () => {
    const c = capture();
    expect(await main(['serve', '--config', '/nonexistent/switchboard.yaml'], c.io)).toBe(2);
    expect(c.err()).toContain('does not exist');
  });

  it('trigger names the configured providers when the provider is unknown', async () => {
    const dir = await tempDir('sb-cli-');
    const file = join(dir, 'sb.yaml');
    await writeFile(file, 'providers:\n  sandbox: { trust_mode: open }\n');
    const c = capture();
    expect(await main(['trigger', 'github', '--config', file], c.io)).toBe(2);
    expect(c.err()).toContain('providers: sandbox');
  });

  it('exits 1 with one line naming the problem when the embedded PostgreSQL cannot start', async () => {
    const dataDir = await tempDir('sb-cli-data-');
    // A folder where the cluster should be, that is not one: the start refuses before initdb.
    await mkdir(join(dataDir, 'postgres'));
    const env: NodeJS.ProcessEnv = { ...process.env, SWITCHBOARD_DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
    delete env.DATABASE_URL;
    const failure = await cli(['serve', '--port', '0'], env).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toBe(
      `switchboard: ${join(dataDir, 'postgres')} exists but is not a PostgreSQL data directory (no PG_VERSION); move it away and start again\n`,
    );
  });
});

describe('bin/switchboard.js', () => {
  const made: string[] = [];
  afterAll(async () => {
    for (const dir of made) await rm(dir, { recursive: true, force: true });
  });

  /** The bin copied beside a dist/ of our making, as the package lays them out. */
  async function binWith(entry: string | null): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'sb-bin-'));
    made.push(dir);
    await mkdir(join(dir, 'bin'));
    await copyFile(bin, join(dir, 'bin/switchboard.js'));
    if (entry !== null) {
      await mkdir(join(dir, 'dist/src/cli'), { recursive: true });
      await writeFile(join(dir, 'dist/src/cli/entry.js'), entry);
    }
    return join(dir, 'bin/switchboard.js');
  }
  const outcome = (file: string, args: string[]) =>
    run(process.execPath, [file, ...args]).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );

  it('runs the compiled entry point in dist/ with the arguments', async () => {
    const file = await binWith('process.stdout.write(JSON.stringify(process.argv.slice(2)));\n');
    expect(await outcome(file, ['serve', '--port', '0'])).toEqual({
      code: 0,
      stdout: '["serve","--port","0"]',
      stderr: '',
    });
  });

  it('says how to build when dist/ is missing, and passes any other failure through', async () => {
    const missing = await outcome(await binWith(null), ['--help']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      'switchboard: dist/ is not built. Run `npm run build` (`npm ci` does, when the devDependencies are installed).\n',
    );
    const broken = await outcome(await binWith("import './not-there.js';\n"), ['--help']);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain('not-there.js');
    expect(broken.stderr).not.toContain('dist/ is not built');
  });
});

/** A data directory whose lock a live process (this one) holds, as a running switchboard's. */
async function busyDataDir(): Promise<string> {
  const dir = await tempDir('sb-cli-busy-');
  await writeFile(join(dir, 'switchboard.lock'), JSON.stringify({ pid: process.pid, host: hostname(), nonce: 'test' }));
  return dir;
}

describe('arguments are checked before anything starts', () => {
  const usageErrors: [string[], string, string][] = [
    [['token'], 'missing <create|list|revoke>', 'token'],
    [['token', 'list', 'extra'], 'token list takes no name', 'token'],
    [['token', 'create'], 'token create needs a <name>', 'token'],
    [['token', 'forget', 'x'], 'token takes create <name>, list or revoke <name>, not "forget"', 'token'],
    [['serve', '--port', 'abc'], '--port: "abc" is not a port number (0 to 65535)', 'serve'],
    [['--port', 'abc'], '--port: "abc" is not a port number (0 to 65535)', 'serve'],
    [['serve', '--role', 'both'], '--role: "both" is not a role (all, ingest, worker)', 'serve'],
    [['serve', '--nope'], 'unknown option --nope', 'serve'],
    [['--nope'], 'unknown option --nope', 'serve'],
    [['serve', '--port'], '--port needs a value (PORT)', 'serve'],
    [['serve', '--strict=yes'], '--strict takes no value', 'serve'],
    [['trigger'], 'missing <provider>', 'trigger'],
    [['data'], 'missing <info|rm>', 'data'],
    [['data', 'info', '--yes'], '--yes goes with data rm', 'data'],
    [['help', 'bogus'], 'no command named "bogus"', 'help'],
    [['help', 'triger'], 'no command named "triger"; did you mean "trigger"?', 'help'],
  ];

  it('answers a usage error with exit 2, naming the argument and its --help, without touching the data directory', async () => {
    // The data directory is busy: a command that reached the database would say so instead.
    const dataDir = await busyDataDir();
    for (const [args, problem, command] of usageErrors) {
      const c = capture();
      const env = { ...childEnv({ SWITCHBOARD_DATA_DIR: dataDir }), PORT: '' };
      expect(await main(args, { ...c.io, env }), args.join(' ')).toBe(2);
      // In the repository the hint is `npm start -- …` (invocation.ts).
      expect(c.err(), args.join(' ')).toBe(`switchboard: ${problem}\nSee: npm start -- ${command} --help\n`);
    }
    const c = capture();
    expect(await main(['bogus'], c.io)).toBe(2);
    expect(c.err()).toBe(
      'switchboard: unknown command "bogus"; the commands are serve, init, migrate, token, trigger, listen, data, help\n' +
        'See: npm start -- --help\n',
    );
    // A near miss is named instead of the whole list.
    for (const [typed, meant] of [
      ['serv', 'serve'],
      ['tokne', 'token'],
      ['Data', 'data'],
    ]) {
      const near = capture();
      expect(await main([typed ?? ''], near.io)).toBe(2);
      expect(near.err()).toBe(
        `switchboard: unknown command "${typed}"; did you mean "${meant}"?\nSee: npm start -- --help\n`,
      );
    }
  });

  it('as a process, answers a usage error having loaded only the command line (no config, logger, server or database)', async () => {
    const dataDir = await busyDataDir();
    const log = join(dataDir, 'modules.log');
    const env = childEnv({ SWITCHBOARD_DATA_DIR: dataDir, SB_MODULES_LOG: log });
    const recorder = join(import.meta.dirname, 'support/record-modules.mjs');
    for (const args of [['token'], ['serve', '--port', 'abc'], ['--nope']]) {
      await rm(log, { force: true });
      const entry = join(srcDir, 'cli/entry.ts');
      const outcome = await run(process.execPath, ['--import', 'tsx', '--import', recorder, entry, ...args], {
        cwd: repo,
        env,
      }).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
      expect(outcome.code, args.join(' ')).toBe(2);
      const loaded = [...new Set((await readFile(log, 'utf8')).split('\n'))].filter((url) => url.startsWith('file:'));
      const ours = loaded
        .filter((url) => !url.includes('/node_modules/'))
        .map((url) => relative(repo, fileURLToPath(url)));
      // The command line's own small modules, and nothing of the server.
      expect(ours.filter((file) => !file.startsWith('src/cli/')).sort(), args.join(' ')).toEqual([
        'generated/constants.ts',
        'src/config/config-error.ts',
        'src/errors/internal-error.ts',
        'src/shared/did-you-mean.ts',
        'src/shared/package-names.ts',
      ]);
      // No library of the server either (slonik, pg, pino, ajv, koa…): only tsx itself.
      expect(loaded.filter((url) => url.includes('/node_modules/') && !url.includes('/node_modules/tsx/'))).toEqual([]);
    }
  }, 60_000);

  it('has help for every command: switchboard help, help <command> and <command> --help', async () => {
    const general = capture();
    expect(await main(['help'], general.io)).toBe(0);
    for (const command of ['serve', 'init', 'migrate', 'token', 'trigger', 'listen', 'data', 'help']) {
      expect(general.out()).toMatch(new RegExp(`^ {2}switchboard \\[?${command}\\b`, 'm'));
    }
    expect(general.out()).toContain('Usage (run here as: npm start -- <command> [options])');
    for (const args of [
      ['help', 'data'],
      ['data', '--help'],
      ['data', '-h'],
    ]) {
      const c = capture();
      expect(await main(args, c.io), args.join(' ')).toBe(0);
      expect(c.out()).toMatch(/^Usage: switchboard data info \| data rm \[--yes\]\n/);
      expect(c.out()).toMatch(/^ {2}-y, --yes +Remove without asking\.$/m);
    }
    const listen = capture();
    expect(await main(['help', 'listen'], listen.io)).toBe(0);
    expect(listen.out()).toMatch(/^Usage: switchboard listen <server-url> --forward-to <url>/);
  });

  it('reports a busy data directory once, in plain text, with no log line or stack', async () => {
    const dataDir = await busyDataDir();
    const failure = await cliOutcome(['serve', '--port', '0'], childEnv({ SWITCHBOARD_DATA_DIR: dataDir }));
    expect(failure.code).toBe(1);
    expect(failure.stderr).toBe(
      `switchboard: data directory ${dataDir} is in use by another switchboard (pid ${process.pid}). ` +
        'Stop that instance, or point SWITCHBOARD_DATA_DIR at another directory. ' +
        `If no switchboard is running there, delete ${join(dataDir, 'switchboard.lock')}.\n`,
    );
    expect(failure.stdout).toBe('');
  });

  it('trigger names the URL it tried, why it failed, and --url', async () => {
    const dir = await tempDir('sb-cli-');
    const file = join(dir, 'sb.yaml');
    await writeFile(file, 'providers:\n  sandbox: { trust_mode: open }\n');
    const port = await closedPort();
    const c = capture();
    expect(await main(['trigger', 'sandbox', '--config', file, '--url', `http://127.0.0.1:${port}`], c.io)).toBe(1);
    expect(c.err()).toBe(
      `switchboard: could not reach switchboard at http://127.0.0.1:${port}/hooks/sandbox: connection refused: ` +
        'nothing listens there. Check that --url names a running switchboard.\n',
    );
  });
});

describe('serve: what it says at start-up', () => {
  it('shows a first token made by a start that failed, warns of unset variables, lists what it serves, and leaves Redis alone', async () => {
    const db = await createEmptyDatabase();
    const dataDir = await tempDir('sb-cli-first-');
    const configDir = await tempDir('sb-cli-config-');
    const env = childEnv({ DATABASE_URL: db.url, SWITCHBOARD_DATA_DIR: dataDir });
    // 1. A forward rule pointing back at switchboard itself is refused after the token was made.
    const port = await closedPort();
    const looping = join(configDir, 'looping.yaml');
    await writeFile(
      looping,
      `providers:\n  sandbox: { trust_mode: open }\nforward:\n  loop: { to: "http://127.0.0.1:${port}/hooks/sandbox" }\n`,
    );
    const refused = await cliOutcome(
      ['serve', '--config', looping, '--host', '127.0.0.1', '--port', String(port)],
      env,
    );
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stdout).not.toContain('Created the first API token');
    const token = (await readFile(join(dataDir, 'token'), 'utf8')).trim();

    // 2. The next start serves: it shows that token, once.
    const redis = createNetServer();
    let redisConnections = 0;
    redis.on('connection', (socket) => {
      redisConnections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => redis.listen(0, '127.0.0.1', resolve));
    const unset = 'SB_TEST_UNSET_SECRET';
    const consumerPort = await closedPort();
    const config = [
      'providers:',
      `  github: { preset: github, secret: "\${${unset}}" }`,
      `  stripe: { preset: stripe, secret: "\${${unset}}" }`,
      '  sandbox: { trust_mode: open }',
      'forward:',
      `  local-app: { to: "http://127.0.0.1:${consumerPort}/webhooks", providers: [sandbox] }`,
      '',
    ].join('\n');
    const server = await spawnSwitchboard({
      config,
      databaseUrl: db.url,
      dataDir,
      token: null,
      redisUrl: `redis://127.0.0.1:${(redis.address() as { port: number }).port}`,
    });
    try {
      const output = server.output();
      expect(output).toContain(
        'Created the first API token on an earlier start that stopped before serving, so it was not shown then.\n' +
          `It is saved in ${join(dataDir, 'token')}:\n  ${token}\n`,
      );
      expect(output).toMatch(
        /^ {2}github +POST \/hooks\/github +signed \(github\) +NO SECRET \(\$\{SB_TEST_UNSET_SECRET\} not set\): every delivery is rejected$/m,
      );
      expect(output).toMatch(/^ {2}sandbox +POST \/hooks\/sandbox +open +no check \(open\)$/m);
      expect(output).toContain('  Without a secret, rejecting every delivery: github, stripe\n');
      expect(output).toMatch(
        new RegExp(
          `^Forward rules \\(1\\):\\n {2}local-app +→ http://127\\.0\\.0\\.1:${consumerPort}/webhooks +sandbox$`,
          'm',
        ),
      );
      const warnings = server.logLines().filter((line) => line.variable === unset);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: 40, keys: ['providers.github.secret', 'providers.stripe.secret'] });
      expect(server.logLines().some((line) => line.msg === 'no queue providers; Redis not used')).toBe(true);
    } finally {
      expect((await server.stop()).code).toBe(0);
      server.cleanup();
    }
    expect(redisConnections).toBe(0);
    // 3. A later start does not show it again.
    const again = await spawnSwitchboard({ config: 'providers: {}\n', databaseUrl: db.url, dataDir, token: null });
    try {
      expect(again.output()).not.toContain('Created the first API token');
      expect(again.output()).toContain(NO_PROVIDERS_HINT);
    } finally {
      await again.stop();
      again.cleanup();
    }

    // --strict, or server.strict, refuse the unset variable before anything starts.
    const strictConfig = join(configDir, 'strict.yaml');
    await writeFile(strictConfig, config);
    const strict = await cliOutcome(['serve', '--config', strictConfig, '--strict'], env);
    expect(strict.code).toBe(2);
    expect(strict.stderr).toBe(
      `switchboard: \${${unset}} is not set (used by providers.github.secret, providers.stripe.secret); it reads as empty\n` +
        'switchboard: --strict refuses to start with an unset variable\n',
    );
    await writeFile(strictConfig, `${config}server: { strict: true }\n`);
    const c = capture();
    expect(await main(['serve', '--config', strictConfig], { ...c.io, env })).toBe(2);
    expect(c.err()).toContain('switchboard: server.strict refuses to start with an unset variable\n');

    await new Promise((resolve) => redis.close(resolve));
    await db.drop();
  }, 180_000);

  it('logs one-line text on a terminal and JSON lines through a pipe, on stderr beside a result', async () => {
    const db = await createEmptyDatabase();
    const env = childEnv({ DATABASE_URL: db.url, LOG_LEVEL: 'info', NO_COLOR: '1' });
    const command = [process.execPath, '--import', 'tsx', join(srcDir, 'cli/entry.ts'), 'token', 'list'];
    const piped = await cliOutcome(['token', 'list'], env);
    expect(piped.code).toBe(0);
    expect(piped.stdout).toBe('no tokens\n');
    expect(piped.stderr).toMatch(/^\{"level":30,.*"msg":"database ready"\}$/m);
    // script(1) gives the command a terminal.
    const { stdout } = await run('script', ['-qec', command.map((part) => `'${part}'`).join(' '), '/dev/null'], {
      cwd: repo,
      env,
    });
    expect(stdout).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: database ready \{.*"embedded":false.*\}\r?$/m);
    expect(stdout).not.toContain('{"level"');
    await db.drop();
  }, 180_000);
});

describe('token and data commands beside a server on the embedded PostgreSQL', () => {
  it('manage tokens through the running server, show where the data is, and remove it only once the server stopped', async () => {
    // mkdtemp is mode 0700: as root the cluster goes to /var/lib/switchboard/clusters/, which data rm removes too.
    const dataDir = await tempDir('sb-cli-embedded-');
    const env = childEnv({ SWITCHBOARD_DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    const server = await spawnSwitchboard({
      config: { providers: { sandbox: { trust_mode: 'open' } } },
      databaseUrl: null,
      dataDir,
      token: null,
      logLevel: 'warn',
    });
    let clusterDir = '';
    try {
      const created = await cliOutcome(['token', 'create', 'laptop'], env);
      expect(created.code, created.stderr).toBe(0);
      const laptop = created.stdout.trim();
      const providers = await fetch(`${server.url}/api/providers`, { headers: { authorization: `Bearer ${laptop}` } });
      expect(providers.status).toBe(200);
      const listed = await cliOutcome(['token', 'list'], env);
      expect(listed.stdout).toMatch(/^default +\S+ +\S+ +active$/m);
      expect(listed.stdout).toMatch(/^laptop +\S+ +\S+ +active$/m);
      expect((await cliOutcome(['token', 'revoke', 'laptop'], env)).stderr).toBe('revoked token laptop\n');

      const info = await cliOutcome(['data', 'info'], env);
      expect(info.stdout).toContain(`server          running (pid ${server.pid})\n`);
      clusterDir = /^cluster {9}(\S+) {2}\(/m.exec(info.stdout)?.[1] ?? '';
      expect(clusterDir).toMatch(/\/postgres$/);
      const refused = await cliOutcome(['data', 'rm', '--yes'], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(
        `switchboard: a switchboard (pid ${server.pid}) is running on ${dataDir}; stop it first\n`,
      );
    } finally {
      expect((await server.stop()).code).toBe(0);
    }
    expect(await readdir(dataDir)).not.toContain('postgres.running');
    const info = await cliOutcome(['data', 'info'], env);
    expect(info.stdout).toContain('server          not running\n');
    expect(info.stdout).toMatch(/^cluster {9}\S+ {2}\(\d+\.\d MB\)$/m);
    const removed = await cliOutcome(['data', 'rm', '--yes'], env);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/^removed \d+\.\d MB:\n/);
    await expect(readdir(clusterDir)).rejects.toThrow(/ENOENT/);
    expect(await readdir(dataDir).catch(() => [])).not.toContain('postgres.password');
  }, 180_000);
});
