// Deterministic Job names: the same command, step and attempt always give the same name, so
// creating a step's Job twice (after a restart, say) creates it once.
export interface JobRef {
  name: string;
  commandId: string;
  step: number;
  attempt: number;
}

export function jobName(commandId: string, step: number, attempt: number): string {
  return `ffc-${commandId}-s${step}-a${attempt}`;
}

export const JOB_NAME_PATTERN = /^ffc-([0-9a-f-]{36})-s(\d+)-a(\d+)$/;

/** The ref a job name stands for, or null for names this service did not make. */
export function parseJobName(name: string): JobRef | null {
  const m = JOB_NAME_PATTERN.exec(name);
  return m ? { name, commandId: m[1], step: Number(m[2]), attempt: Number(m[3]) } : null;
}
