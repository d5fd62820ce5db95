/**
 * Summarises a V8 CPU profile (`node --cpu-prof`) as flat self-time tables: by package or source
 * file, and by function. The flame graph of a forward drain is wide and shallow, so the self time
 * of each part says where a delivery's CPU goes more plainly than the tree does.
 *
 *   npx tsx bench/cpu-profile-summary.ts PROFILE.cpuprofile [--top 25] [--per N]
 *
 * --per N divides every figure by N (the deliveries the profile covers) and prints µs per delivery.
 * --inclusive adds a table of total time by function (self time plus what it called): what one
 * step of a request path costs in all, e.g. signature verification or building the insert.
 * --window PART counts only the samples from the first to the last whose stack has a frame in a
 * file whose path contains PART (e.g. `src/outbound/`): a forward drain without the process's
 * start-up and shutdown.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  options: {
    top: { type: 'string', default: '25' },
    per: { type: 'string' },
    inclusive: { type: 'boolean' },
    window: { type: 'string' },
  },
  allowPositionals: true,
});
const file = positionals[0];
if (file === undefined) {
  throw new Error('usage: cpu-profile-summary.ts PROFILE.cpuprofile [--top N] [--per N] [--inclusive]');
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
const top = Number(values.top);
const per = values.per === undefined ? undefined : Number(values.per);

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);

/** Whether the sample's stack has a frame whose file's path contains `part`. */
function stackIn(id: number, part: string): boolean {
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
    if (byId.get(at)?.callFrame.url.includes(part)) return true;
  }
  return false;
}

/** The sample indices counted: all of them, or --window's span. */
function sampleSpan(): [from: number, to: number] {
  const part = values.window;
  if (part === undefined) return [0, profile.samples.length - 1];
  const inside = profile.samples.flatMap((id, index) => (stackIn(id, part) ? [index] : []));
  if (inside.length === 0) throw new Error(`no sample has a frame in a file matching ${part}`);
  return [inside[0] ?? 0, inside[inside.length - 1] ?? 0];
}

const [from, to] = sampleSpan();
const selfUs = new Map<number, number>();
profile.samples.forEach((id, index) => {
  if (index < from || index > to) return;
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
});

/** Where a frame's code lives: a package, a file of src/, Node's own code, or V8's pseudo-frames. */
function place(url: string, name: string): string {
  if (url === '') return `(${name || 'native'})`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg?.[1] !== undefined) return pkg[1];
  if (url.startsWith('node:')) return url;
  const src = /\/(src\/.+)$/.exec(url);
  return src?.[1] ?? url;
}

const functionLabel = (node: ProfileNode): string => {
  const { functionName, url, lineNumber } = node.callFrame;
  return `${functionName || '(anonymous)'} ${place(url, functionName)}:${lineNumber + 1}`;
};

const byPlace = new Map<string, number>();
const byFunction = new Map<string, number>();
let total = 0;
let idle = 0;
for (const [id, us] of selfUs) {
  const node = byId.get(id);
  if (!node) continue;
  const { functionName, url } = node.callFrame;
  if (functionName === '(idle)') {
    idle += us;
    continue;
  }
  total += us;
  const where = place(url, functionName);
  byPlace.set(where, (byPlace.get(where) ?? 0) + us);
  const fn = functionLabel(node);
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
}

const show = (us: number): string =>
  per === undefined ? `${(us / 1000).toFixed(1)} ms` : `${(us / per).toFixed(1)} µs/delivery`;
const table = (title: string, rows: Map<string, number>): void => {
  process.stdout.write(`\n${title}\n`);
  for (const [name, us] of [...rows].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`  ${((100 * us) / total).toFixed(1).padStart(5)} %  ${show(us).padStart(18)}  ${name}\n`);
  }
};
process.stdout.write(
  `${file}: ${(total / 1000).toFixed(0)} ms on CPU, ${(idle / 1000).toFixed(0)} ms idle` +
    (per === undefined ? '' : `; ${show(total)} over ${per} deliveries`) +
    '\n',
);
table('self time by package or file', byPlace);
table('self time by function', byFunction);

if (values.inclusive) {
  // Each sample counts once for every function on its stack (a recursive one only once).
  const inclusive = new Map<string, number>();
  for (const [id, us] of selfUs) {
    if (byId.get(id)?.callFrame.functionName === '(idle)') continue;
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const node = byId.get(at);
      if (!node || node.callFrame.functionName === '(root)') continue;
      const label = functionLabel(node);
      if (seen.has(label)) continue;
      seen.add(label);
      inclusive.set(label, (inclusive.get(label) ?? 0) + us);
    }
  }
  table('total time by function (itself and what it called)', inclusive);
}
