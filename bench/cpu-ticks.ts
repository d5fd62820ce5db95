/** Machine-wide CPU counters for benchmarks, which print how much of a run the hypervisor took. */
import { readFileSync } from 'node:fs';

export interface CpuTicks {
  total: number;
  steal: number;
  busy: number;
}

/**
 * Linux's CPU counters (/proc/stat): total, steal and busy ticks (user, nice, system, irq and
 * softirq: what this machine's own processes and kernel used), or undefined elsewhere.
 */
export function cpuTicks(): CpuTicks | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
    if (fields.length < 8 || fields.some((n) => !Number.isFinite(n))) return undefined;
    const field = (index: number): number => fields[index] ?? 0;
    return {
      total: fields.reduce((x, y) => x + y, 0),
      steal: field(7),
      busy: field(0) + field(1) + field(2) + field(5) + field(6),
    };
  } catch {
    return undefined;
  }
}

/**
 * The share of CPU time stolen by the hypervisor between two readings; undefined without them.
 * On a virtual machine a run with much steal measures the host's neighbours as much as the code.
 */
export function stealShare(before: CpuTicks | undefined, after: CpuTicks | undefined): number | undefined {
  if (!before || !after || after.total <= before.total) return undefined;
  return (after.steal - before.steal) / (after.total - before.total);
}

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks. */
const CLOCK_TICKS_PER_SECOND = 100;

/** CPU seconds (user and system) a process has used so far, from /proc/<pid>/stat. */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}
