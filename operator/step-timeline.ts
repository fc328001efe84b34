// Where a step's time went, for the message of a step stopped at its deadline: a deadline that
// counts waiting is not the user's fault, and "ran longer than its deadline" alone does not say
// whether ffmpeg was slow, a download was, or the pod never found a node.
import { ProcessingStage } from '../core/jobs/step-spec.ts';

export interface StepTimeline {
  /** When the Job started (its deadline counts from here). */
  jobStart: Date | null;
  /** When the scheduler bound its pod to a node, and when its container started. */
  scheduledAt: Date | null;
  containerStartedAt: Date | null;
  /** The runner's stages as they were reported, in order. */
  stages: { stage: ProcessingStage; at: Date }[];
  /** When the Job was stopped. */
  end: Date;
}

const STAGE_WORDS: Record<ProcessingStage, string> = {
  DOWNLOADING: 'downloading inputs',
  PREPARING_INPUT_FILES: 'preparing inputs',
  FFMPEG_PROCESSING: 'in ffmpeg',
  UPLOADING: 'probing and uploading outputs',
};

const seconds = (from: Date, to: Date) => Math.max(0, Math.round((to.getTime() - from.getTime()) / 1000));

/** "12 s waiting for a node, 1 s starting its container, 3 s downloading inputs, 34 s in ffmpeg". */
export function describeTimeline(t: StepTimeline): string {
  const parts: string[] = [];
  const runnerStart = t.stages[0]?.at ?? t.containerStartedAt;
  if (t.jobStart) {
    if (t.scheduledAt) parts.push(`${seconds(t.jobStart, t.scheduledAt)} s waiting for a node`);
    else return `${seconds(t.jobStart, t.end)} s waiting for a node (its pod was never scheduled)`;
    const started = runnerStart ?? t.end;
    parts.push(`${seconds(t.scheduledAt, started)} s starting its container`);
  }
  t.stages.forEach((s, i) => {
    const next = t.stages[i + 1]?.at ?? t.end;
    parts.push(`${seconds(s.at, next)} s ${STAGE_WORDS[s.stage]}`);
  });
  return parts.join(', ');
}
