// Figures the benchmarks print.
import { readFile } from 'node:fs/promises';

/** The value below which a fraction `q` of the values lie (nearest rank). */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

export const median = (values: number[]): number => quantile(values, 0.5);

/** Fields of /proc/<pid>/status given in kB (VmRSS, VmHWM, ...), in KiB; NaN when absent. */
export async function procStatusKiB(pid: number, ...fields: string[]): Promise<number[]> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return fields.map((field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN));
}

/** CPU time a process has used so far (user + system, all its threads, not its children), in seconds. */
export async function processCpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // After the command name, which may hold spaces: field 3 (state) onwards; utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // clock ticks, USER_HZ = 100 on Linux
}

/** One row of the table, as `npm run bench` (e2e/bench/all.ts) collects it from each benchmark's output. */
export interface BenchRow {
  what: string;
  service: string;
  baseline: string;
  /** The service against its baseline, e.g. "0.42x" or "+140 ms". */
  ratio: string;
  goal: string;
}

export const ROW_PREFIX = 'BENCH-ROW ';

export function reportRow(row: BenchRow): void {
  console.log(ROW_PREFIX + JSON.stringify(row));
}
