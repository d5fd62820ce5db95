/**
 * Runs the official MCP conformance suite (@modelcontextprotocol/conformance) against a real
 * switchboard: the Koa app with the MCP surface, the PostgreSQL store (DATABASE_URL, or an
 * embedded server in a temporary directory) and the LISTEN/NOTIFY bus, on a real port.
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
import { once } from 'node:events';
import { mkdtemp, readFile, readdir, rm, chmod } from 'node:fs/promises';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createHostCheck } from '../../src/auth/host-check.ts';
import { createRateLimiter } from '../../src/auth/rate-limiter.ts';
import { requireBearer } from '../../src/auth/require-bearer.ts';
import { createTokenService } from '../../src/auth/token-service.ts';
import { createPostgresEventBus } from '../../src/bus/postgres-event-bus.ts';
import { resolveConfig } from '../../src/config/resolve-config.ts';
import { createApp } from '../../src/http/create-app.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createMcpSurface } from '../../src/mcp/create-mcp-surface.ts';
import { createProviderDirectory } from '../../src/providers/provider-directory.ts';
import { createReplayService } from '../../src/replay/replay-service.ts';
import { createEventStore } from '../../src/store/pg-event-store.ts';
import { createReplayAttemptRepository } from '../../src/store/replay-attempt-repository.ts';
import { createTokenRepository } from '../../src/store/token-repository.ts';
import { isDatabaseUp, openDatabase } from '../../src/store/database.ts';

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

async function listen(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** Forwards every request to the target as is, plus the bearer token; responses (SSE included) stream back. */
function startAuthProxy(targetPort: () => number, token: string): Server {
  return createServer((incoming: IncomingMessage, outgoing: ServerResponse) => {
    const upstream = request(
      {
        host: '127.0.0.1',
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
  });
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
    const proxy = startAuthProxy(() => appPort, token);
    const proxyPort = await listen(proxy);
    closers.unshift(() => new Promise<void>((resolve) => proxy.close(() => resolve())));

    const config = resolveConfig({ server: { allowed_hosts: [`127.0.0.1:${proxyPort}`] } });
    const store = createEventStore(database.pool);
    const bus = createPostgresEventBus({ databaseUrl: database.url, logger: log });
    await bus.ready();
    closers.unshift(() => bus.close());
    const limiter = createRateLimiter({ limits: config.rateLimits });
    const surface = createMcpSurface({
      store,
      providers: createProviderDirectory(config.providers, () => undefined),
      replay: createReplayService({
        store,
        attempts: createReplayAttemptRepository(database.pool),
        providers: config.providers,
        replay: config.replay,
        allow: config.outbound.allow,
        selfAddresses: () => [{ host: '127.0.0.1', port: appPort }],
        checkRateLimit: limiter.checkReplay,
        logger: log,
      }),
      bus,
      checkReadLimit: limiter.checkRead,
      checkHost: createHostCheck({ bindHost: '127.0.0.1', allowedHosts: config.server.allowedHosts }),
      authenticate: requireBearer(createTokenService({ tokens }), { logger: log }),
      logger: log,
      sessions: config.mcp,
      replayDefaultTarget: config.replay.defaultTarget,
      replayRate: config.rateLimits.replay,
    });
    const app = createApp({
      logger: log,
      isDatabaseUp: () => isDatabaseUp(database.pool),
      trustProxy: false,
      surfaces: [surface.middleware],
    });
    const handle = app.callback();
    const server = createServer((req, res) => void handle(req, res));
    appPort = await listen(server);
    closers.unshift(async () => {
      await surface.closeAll();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

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
