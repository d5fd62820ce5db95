/**
 * PostgreSQL's side of a benchmark's CPU: the backends serving one database, read from
 * /proc/<pid>/stat (the server runs on this machine for every bench; 10 ms ticks, so only spans
 * of seconds mean anything).
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';

/** Linux reports process times in USER_HZ, which is 100 on every architecture Node runs on. */
const TICKS_PER_SECOND = 100;

/** CPU microseconds (user + system) a process has used; 0 once it is gone or elsewhere than Linux. */
function cpuMicrosOf(pid: number): number {
  try {
    // The command name may hold spaces and parentheses; the fields after its last ") " do not.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND) * 1_000_000;
  } catch {
    return 0;
  }
}

export interface BackendCpu {
  /** Starts a span: the backends' CPU so far, per pid. */
  mark(): Promise<Map<number, number>>;
  /** CPU µs used since `mark` by the backends alive now (one that started meanwhile counts in full). */
  since(mark: Map<number, number>): Promise<number>;
  close(): Promise<void>;
}

/** Watches the backends of `databaseUrl`'s database, its own connection left out. */
export async function watchBackendCpu(databaseUrl: string): Promise<BackendCpu> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const read = async (): Promise<Map<number, number>> => {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    return new Map(rows.map(({ pid }) => [pid, cpuMicrosOf(pid)]));
  };
  return {
    mark: read,
    async since(mark) {
      let total = 0;
      for (const [pid, micros] of await read()) total += micros - (mark.get(pid) ?? 0);
      return total;
    },
    close: () => client.end(),
  };
}
