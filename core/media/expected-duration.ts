// How long ffmpeg's output will be, when that can be told from the command and the inputs' durations
// (core/media/input-durations.ts): what a progress percentage is measured against. Only the plain
// cases are worked out: -ss, -t, -to and -sseof on inputs, -ss, -t, -to and -shortest on outputs, and
// looped inputs (endless unless an output limit says otherwise). Filters that trim or stretch
// (trim, setpts, concat, ...) are not: a percentage is then a guess, which the reader clamps to 100.
import type { Arg, ParsedCommand } from '../command-line/parsed-command.ts';

/**
 * Seconds of a time duration as ffmpeg reads one (av_parse_time): `[-][HH:]MM:SS[.m...]` or
 * `[-]S+[.m...][s|ms|us]`. Null for anything else.
 */
export function parseFfmpegDuration(text: string): number | null {
  const clock = /^(-?)(?:(\d+):)?(\d+):(\d+(?:\.\d*)?)$/.exec(text);
  if (clock) {
    const seconds = Number(clock[2] ?? 0) * 3600 + Number(clock[3]) * 60 + Number(clock[4]);
    return clock[1] ? -seconds : seconds;
  }
  const plain = /^(-?)(\d+(?:\.\d*)?|\.\d+)(s|ms|us)?$/.exec(text);
  if (!plain) return null;
  const unit = plain[3] === 'ms' ? 1e-3 : plain[3] === 'us' ? 1e-6 : 1;
  const seconds = Number(plain[2]) * unit;
  return plain[1] ? -seconds : seconds;
}

/** The last value given to `-name` (ffmpeg keeps the last), if it is plain text. */
function lastValue(options: Arg[], name: string): string | null {
  for (let i = options.length - 2; i >= 0; i--) {
    if (options[i] !== `-${name}`) continue;
    const value = options[i + 1];
    return typeof value === 'string' ? value : null;
  }
  return null;
}

function durationOption(options: Arg[], name: string): number | null {
  const value = lastValue(options, name);
  return value === null ? null : parseFfmpegDuration(value);
}

/** What is left of a span of `available` seconds (null: unknown) after skipping `start` and cutting at -t / -to. */
function limited(options: Arg[], available: number | null, start: number): number | null {
  let length = available === null ? null : Math.max(0, available - start);
  const t = durationOption(options, 't');
  if (t !== null && t >= 0) length = length === null ? t : Math.min(length, t);
  const to = durationOption(options, 'to');
  if (to !== null) length = length === null ? Math.max(0, to - start) : Math.min(length, Math.max(0, to - start));
  return length;
}

function inputLength(options: Arg[], printed: number | null): number | null {
  const loop = lastValue(options, 'stream_loop') ?? lastValue(options, 'loop');
  let available = loop !== null && loop !== '0' ? null : printed; // looped: endless unless cut below
  const fromEnd = durationOption(options, 'sseof');
  if (available !== null && fromEnd !== null && fromEnd < 0) available = Math.min(available, -fromEnd);
  const start = durationOption(options, 'ss') ?? 0;
  return limited(options, available, Math.max(0, start));
}

/**
 * Seconds of output the command will write (the longest of its outputs), or null when that cannot be
 * told. `inputDurations` holds what ffmpeg printed for each input (null: N/A or not printed).
 */
export function expectedDurationSeconds(command: ParsedCommand, inputDurations: readonly (number | null)[]): number | null {
  const inputs = command.inputs.map((input, i) => inputLength(input.options, inputDurations[i] ?? null));
  const known = inputs.filter((d): d is number => d !== null);
  let longest: number | null = null;
  for (const output of command.outputs) {
    // -shortest ends with the shortest input; otherwise an endless input makes the output endless.
    const shortest = output.options.includes('-shortest');
    const fromInputs = shortest
      ? known.length > 0
        ? Math.min(...known)
        : null
      : known.length === inputs.length && known.length > 0
        ? Math.max(...known)
        : null;
    const start = durationOption(output.options, 'ss') ?? 0;
    const length = limited(output.options, fromInputs, Math.max(0, start));
    if (length === null) return null;
    longest = Math.max(longest ?? 0, length);
  }
  return longest;
}
