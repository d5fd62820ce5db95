/**
 * How long `switchboard --help` and a usage error (`switchboard token`, `serve --port abc`, an
 * unknown option; exit 2) take, as wall time of a whole process, against the floor of starting
 * Node at all (`node -e 0`), measured in the same run. The sources run through tsx, as the bin did
 * before dist/ existed, are measured too for comparison.
 *
 *   npm run build && npx tsx bench/cli-start.ts [--rounds 5] [--runs 20]
 *
 * Each round runs every case `runs` times, in an order rotated from round to round so that no case
 * always goes first or last. Target: --help and each usage error within 0.3 s (p90 of all its runs).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuTicks, stealShare } from './cpu-ticks.ts';
import { percentile } from './load-driver.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TARGET_MS = 300;

interface Case {
  name: string;
  args: readonly string[];
  times: number[];
  /** The exit code the case must end with (2 for a usage error). */
  status?: number;
}

function timeOnce(args: readonly string[], status = 0): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  const elapsed = performance.now() - started;
  if (result.status !== status) {
    throw new Error(`node ${args.join(' ')} exited ${result.status}: ${result.stderr.toString().slice(0, 500)}`);
  }
  return elapsed;
}

function main(): number {
  const { values } = parseArgs({
    options: { rounds: { type: 'string', default: '5' }, runs: { type: 'string', default: '20' } },
  });
  const rounds = Math.max(3, Number(values.rounds));
  const runs = Math.max(1, Number(values.runs));
  if (!existsSync(path.join(root, 'dist/src/cli/entry.js'))) {
    process.stderr.write('bench/cli-start: dist/ is not built; run `npm run build` first\n');
    return 1;
  }
  const cases: Case[] = [
    { name: 'node -e 0 (baseline)', args: ['-e', '0'], times: [] },
    { name: 'switchboard --help (bin/, dist/)', args: [path.join(root, 'bin/switchboard.js'), '--help'], times: [] },
    ...[['token'], ['serve', '--port', 'abc'], ['--nope']].map((args) => ({
      name: `switchboard ${args.join(' ')} (exit 2)`,
      args: [path.join(root, 'bin/switchboard.js'), ...args],
      times: [],
      status: 2,
    })),
    {
      name: 'src/ through tsx (the bin before)',
      args: ['--import', 'tsx', path.join(root, 'src/cli/entry.ts'), '--help'],
      times: [],
    },
  ];
  // One unmeasured run each, so the first measured one does not pay for a cold file cache.
  for (const c of cases) timeOnce(c.args, c.status);

  const before = cpuTicks();
  for (let round = 0; round < rounds; round += 1) {
    for (let i = 0; i < cases.length; i += 1) {
      const c = cases[(i + round) % cases.length];
      if (!c) continue;
      for (let run = 0; run < runs; run += 1) c.times.push(timeOnce(c.args, c.status));
    }
  }
  const steal = stealShare(before, cpuTicks());

  const baseline = cases[0];
  const bin = cases[1];
  if (!baseline || !bin) return 1;
  const stats = (c: Case) => {
    const sorted = [...c.times].sort((a, b) => a - b);
    return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), min: sorted[0] ?? 0 };
  };
  const base = stats(baseline);
  process.stdout.write(
    `Wall time of one process, ${rounds} rotated rounds of ${runs} runs per case (Node ${process.version})\n\n`,
  );
  process.stdout.write(
    `${'case'.padEnd(36)}${'p50'.padStart(10)}${'p90'.padStart(10)}${'min'.padStart(10)}   p50 / node -e 0\n`,
  );
  for (const c of cases) {
    const s = stats(c);
    process.stdout.write(
      `${c.name.padEnd(36)}${`${s.p50.toFixed(0)} ms`.padStart(10)}${`${s.p90.toFixed(0)} ms`.padStart(10)}` +
        `${`${s.min.toFixed(0)} ms`.padStart(10)}   ${(s.p50 / base.p50).toFixed(2)}\n`,
    );
  }
  const helpP90 = stats(bin).p90;
  process.stdout.write(
    `\nswitchboard --help beyond starting Node: ${(stats(bin).p50 - base.p50).toFixed(0)} ms at p50\n`,
  );
  const usage = cases.filter((c) => c.status === 2);
  const usageP90 = Math.max(...usage.map((c) => stats(c).p90));
  if (steal !== undefined) {
    process.stdout.write(`CPU time stolen by the hypervisor during the run: ${(steal * 100).toFixed(1)} %\n`);
  }
  const met = helpP90 <= TARGET_MS && usageP90 <= TARGET_MS;
  process.stdout.write(
    `target: --help and usage errors p90 <= ${TARGET_MS} ms: ${met ? 'met' : 'NOT met'} ` +
      `(--help ${helpP90.toFixed(0)} ms, slowest usage error ${usageP90.toFixed(0)} ms)\n`,
  );
  return met ? 0 : 1;
}

process.exitCode = main();
