/**
 * Runs the official MCP conformance suite (@modelcontextprotocol/conformance) against a real
 * switchboard: the product's wiring and HTTP server (test/support/serve-surfaces.ts) over the
 * PostgreSQL store (DATABASE_URL, or an embedded server in a temporary directory), on a real port.
 *
 *   npx tsx test/conformance/run-official.ts [--scenario name]... [--verbose]
 *
 * The suite cannot send an Authorization header, and switchboard has no way to switch
 * authentication off, so the suite talks to a loopback proxy that adds the bearer token and
 * forwards everything else (Host and Origin included) unchanged. The proxy's own address is in
 * server.allowed_hosts, exactly as an operator would list a reverse proxy's.
 *
 * Exit code 0 when every scenario passed, 1 otherwise.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, chmod } from 'node:fs/promises';
import { request, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { resolveConfig } from '../../src/config/resolve-config.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createTokenRepository } from '../../src/store/records/token-repository.ts';
import { openDatabase } from '../../src/store/database/database.ts';
import { listenLocal, LOOPBACK } from '../support/local-server.ts';
import { serveSurfaces } from '../support/serve-surfaces.ts';

export const OFFICIAL_SCENARIOS = [
  'server-initialize',
  'ping',
  'tools-list',
  'resources-list',
  'server-sse-multiple-streams',
  'dns-rebinding-protection',
] as const;

interface ScenarioOutcome {
  scenario: string;
  exitCode: number;
  checks: Array<{ id: string; status: string; errorMessage?: string }>;
}

const log = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });

/** Forwards every request to the target as is, plus the bearer token; responses (SSE included) stream back. */
function authProxy(targetPort: () => number, token: string): RequestListener {
  return (incoming: IncomingMessage, outgoing: ServerResponse) => {
    const upstream = request(
      {
        host: LOOPBACK,
        port: targetPort(),
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, authorization: `Bearer ${token}` },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    upstream.on('error', () => {
      if (!outgoing.headersSent) outgoing.writeHead(502);
      outgoing.end();
    });
    outgoing.on('close', () => upstream.destroy());
    incoming.pipe(upstream);
  };
}

// The suite's own command, run directly: `npx --no-install conformance` finds the same file, at the
// cost of starting npm once per scenario (about a second of CPU each).
const conformanceBin = path.join(import.meta.dirname, '../../node_modules/.bin/conformance');

function runScenario(url: string, scenario: string, outputDir: string, verbose: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(conformanceBin, ['server', '--url', url, '--scenario', scenario, '--output-dir', outputDir], {
      stdio: verbose ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0 && !verbose) process.stdout.write(output);
      resolve(code ?? 1);
    });
  });
}

/** The suite writes one checks.json per scenario somewhere below the output directory. */
async function readChecks(dir: string): Promise<ScenarioOutcome['checks']> {
  const found: ScenarioOutcome['checks'] = [];
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name !== 'checks.json') continue;
    const parsed: unknown = JSON.parse(await readFile(path.join(entry.parentPath, entry.name), 'utf8'));
    if (Array.isArray(parsed)) found.push(...(parsed as ScenarioOutcome['checks']));
  }
  return found;
}

export async function main(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: { scenario: { type: 'string', multiple: true }, verbose: { type: 'boolean', default: false } },
  });
  const scenarios = values.scenario ?? [...OFFICIAL_SCENARIOS];
  const workDir = await mkdtemp(path.join(tmpdir(), 'switchboard-conformance-'));
  // Embedded PostgreSQL runs as an unprivileged user when we are root; it must be able to enter.
  await chmod(workDir, 0o755);
  const database = await openDatabase({
    databaseUrl: process.env.DATABASE_URL,
    dataDir: path.join(workDir, 'pg'),
    logger: log,
  });
  const closers: Array<() => Promise<void>> = [
    () => database.close(),
    () => rm(workDir, { recursive: true, force: true }),
  ];
  try {
    const tokens = createTokenRepository(database.pool);
    const { token } = await tokens.create(`conformance-${Date.now().toString(36)}`);
    let appPort = 0;
    const proxy = await listenLocal(authProxy(() => appPort, token));
    const proxyPort = proxy.port;
    closers.unshift(() => proxy.close());

    // The product's wiring (buildSurfaces) on the product's HTTP server module, as every
    // in-process harness runs it; the proxy's address is an allowed host, as a reverse proxy's is.
    const served = await serveSurfaces({
      config: resolveConfig({ server: { allowed_hosts: [`127.0.0.1:${proxyPort}`] } }),
      logger: log,
      pool: database.pool,
      databaseUrl: database.url,
      envToken: undefined,
    });
    appPort = served.port;
    closers.unshift(() => served.close());

    const url = `http://127.0.0.1:${proxyPort}/mcp`;
    process.stdout.write(`switchboard on 127.0.0.1:${appPort}, conformance suite via the auth proxy at ${url}\n`);
    const outcomes: ScenarioOutcome[] = [];
    for (const scenario of scenarios) {
      const outputDir = path.join(workDir, 'results', scenario);
      const exitCode = await runScenario(url, scenario, outputDir, values.verbose ?? false);
      const checks = await readChecks(outputDir).catch(() => []);
      outcomes.push({ scenario, exitCode, checks });
    }

    let failed = 0;
    for (const { scenario, exitCode, checks } of outcomes) {
      const bad = checks.filter((c) => c.status === 'FAILURE');
      const warnings = checks.filter((c) => c.status === 'WARNING');
      const passedChecks = checks.filter((c) => c.status === 'SUCCESS').length;
      const ok = exitCode === 0 && bad.length === 0 && passedChecks > 0;
      if (!ok) failed += 1;
      process.stdout.write(
        `${ok ? 'PASS' : 'FAIL'}  ${scenario}  (${passedChecks} passed, ${bad.length} failed, ${warnings.length} warnings)\n`,
      );
      for (const check of [...bad, ...warnings])
        process.stdout.write(`      ${check.status} ${check.id}: ${check.errorMessage ?? ''}\n`);
    }
    process.stdout.write(`${outcomes.length - failed}/${outcomes.length} official conformance scenarios passed\n`);
    return failed === 0 ? 0 : 1;
  } finally {
    for (const close of closers) await close().catch((err: unknown) => log.warn({ err }, 'cleanup failed'));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = await main(process.argv.slice(2));
}
