/**
 * A process's own CPU time and memory from /proc (Linux), for the benches that measure daemon
 * processes: the honest unit on a machine shared with other work.
 */
import { readFileSync } from 'node:fs';

/** USER_HZ on Linux: clock ticks per second in /proc/<pid>/stat. */
const TICKS_PER_S = 100;

/** CPU seconds the process has used (user + system, its threads included); 0 once it has ended. */
export function cpuSecondsOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S; // utime, stime (fields 14, 15)
  } catch {
    return 0;
  }
}

/** Resident memory, MiB (one decimal); 0 once the process has ended. */
export function rssMiBOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : 0;
  } catch {
    return 0;
  }
}
