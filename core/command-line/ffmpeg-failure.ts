// Problems that only ffmpeg judges: a name it does not know (filter, option, format), a filtergraph it
// cannot read. The parser does not refuse these (a 422 is for what the request gets wrong or what the
// service never allows); it records them, in ffmpeg's own words, and the command is accepted and ends
// FAILED with FFMPEG_FAILED at once: nothing is downloaded and ffmpeg does not run (the message is
// already known, and a graph the parser could not read must never reach ffmpeg).

/** Where ffmpeg 5.1 meets a problem; it stops at the first one, in this order (ffmpeg_opt.c). */
export const FfmpegPhase = {
  /** Splitting the argument list: an unknown option. */
  options: 0,
  /** Opening the inputs, in order: an unknown input format, a lavfi input's graph. */
  inputs: 1,
  /** -filter_complex graphs, created before any output is opened. */
  complexGraphs: 2,
  /** Opening the outputs: an unknown output format. */
  outputs: 3,
  /** -vf / -af graphs, created when the first frames arrive. */
  simpleGraphs: 4,
} as const;
export type FfmpegPhase = (typeof FfmpegPhase)[keyof typeof FfmpegPhase];

export interface FfmpegFailure {
  phase: FfmpegPhase;
  /** The lines ffmpeg prints for it, without the `[AVFilterGraph @ 0x...]` prefixes. */
  message: string;
}

/** The problem ffmpeg meets first: the earliest phase, and within it the first one found. */
export function firstFailure(failures: readonly FfmpegFailure[]): FfmpegFailure | undefined {
  let first: FfmpegFailure | undefined;
  for (const failure of failures) if (first === undefined || failure.phase < first.phase) first = failure;
  return first;
}

/** The error_message of a command that fails this way: ffmpeg's message first, then what happened. */
export function failedAtSubmitMessage(message: string, step?: { index: number; count: number }): string {
  const where = step && step.count > 1 ? ` (command ${step.index + 1} of the chain)` : '';
  return `${message}\n--\nffmpeg stops here${where}; found when the command was submitted, so nothing was downloaded and ffmpeg did not run`;
}
