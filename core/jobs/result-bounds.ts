// What a step's result may say, given the step: only the outputs it declared, each once, with sizes
// and counts no larger than the step could have written. A result outside these bounds is refused
// whole (the step fails naming why): its figures count against the account's quotas.
import { ErrorStatus } from '../commands/error-status.ts';
import type { OutputResult, RunnerEvent } from './step-spec.ts';
import { reportedUploadProblem } from './output-parts.ts';

/** Seconds ffmpeg may report beyond max_command_run_seconds: it is stopped at the limit, which takes a moment. */
const FFMPEG_SECONDS_MARGIN = 60;
/** Zip overhead allowed per file of a playlist or folder (headers with names up to 4 KiB, twice) and for the zip. */
const ZIP_BYTES_PER_FILE = 16 * 1024;

export interface StepBounds {
  /** The outputs this step writes, as the command declared them. */
  outputs: readonly { alias: string; fileName: string; kind: 'file' | 'playlist' | 'folder' }[];
  /** Files the step downloads (inputs, and input_compressed_folder), each at most downloadMaxBytes. */
  downloads: number;
  downloadMaxBytes: number;
  maxOutputFileBytes: number;
  maxOutputFiles: number;
  maxCommandRunSeconds: number;
  /** Cluster mode: the step's disk (its work volume's limit); null when unknown. */
  diskBytes: number | null;
  /** Cluster mode: the smallest part of an output uploaded in parts; null when no output may be (one PUT each). */
  outputPartMinBytes: number | null;
}

type Result = Extract<RunnerEvent, { type: 'result' }>;

/** The error_message of a step whose runner's result was refused. */
/** The failure stored in place of a refused result: the step fails saying why, and nothing of it counts. */
export function refusedResult(problem: string): Result {
  return {
    type: 'result',
    ok: false,
    errorStatus: ErrorStatus.INTERNAL_ERROR,
    errorMessage: `the runner's result was refused: ${problem}`,
    ffmpegSeconds: null,
    inputBytes: 0,
  };
}

/** Why the result cannot be true of this step, or null when it can. */
export function resultProblem(event: Result, step: StepBounds): string | null {
  const maxInput = Math.min(step.downloads * step.downloadMaxBytes, step.diskBytes ?? Infinity);
  if (event.inputBytes > maxInput) return `inputBytes: ${event.inputBytes} is more than the step could download (${maxInput} bytes)`;
  const maxSeconds = step.maxCommandRunSeconds + FFMPEG_SECONDS_MARGIN;
  if ((event.ffmpegSeconds ?? 0) > maxSeconds) return `ffmpegSeconds: ${event.ffmpegSeconds} is more than ffmpeg may run (${maxSeconds} s)`;
  if (!event.ok) return null;
  const seen = new Set<string>();
  for (const [i, output] of event.outputs.entries()) {
    const declared = step.outputs.find((d) => d.alias === output.alias);
    if (!declared) return `outputs.${i}.alias: "${output.alias}" is not an output of this step (it writes ${aliases(step)})`;
    if (seen.has(output.alias)) return `outputs.${i}.alias: "${output.alias}" is reported twice`;
    seen.add(output.alias);
    if (output.fileName !== declared.fileName)
      return `outputs.${i}.fileName: "${output.fileName}" is not the declared name of ${output.alias}`;
    const problem = outputProblem(output, declared.kind, step) ?? uploadProblem(output, step);
    if (problem) return `outputs.${i}.${problem}`;
  }
  const missing = step.outputs.find((d) => !seen.has(d.alias));
  if (missing) return `outputs: ${missing.alias} is missing (a success reports every output of the step)`;
  const total = event.outputs.reduce((sum, o) => sum + o.size, 0);
  if (step.diskBytes !== null && total > step.diskBytes)
    return `outputs: ${total} bytes together is more than the step's disk (${step.diskBytes} bytes)`;
  return null;
}

/** An output uploaded in parts: the parts the service planned for its size, each listed once in order. */
function uploadProblem(output: OutputResult, step: StepBounds): string | null {
  if (output.upload === undefined) return null;
  if (step.outputPartMinBytes === null) return 'upload: this step uploads its outputs whole, never in parts';
  return reportedUploadProblem(output.upload, output.compressedSize ?? output.size, step.outputPartMinBytes);
}

function outputProblem(output: OutputResult, kind: 'file' | 'playlist' | 'folder', step: StepBounds): string | null {
  if (kind === 'file') {
    if (output.size < 1) return 'size: a file output is never empty';
    if (output.fileCount !== undefined || output.compressedSize !== undefined)
      return 'fileCount: a single file has no file count or compressed size';
    if (output.size > step.maxOutputFileBytes)
      return `size: ${output.size} is more than one file may hold (${step.maxOutputFileBytes} bytes)`;
    return null;
  }
  if (output.fileCount === undefined || output.compressedSize === undefined)
    return `fileCount: a ${kind} reports its file count and zip size`;
  if (output.fileCount > step.maxOutputFiles)
    return `fileCount: ${output.fileCount} is more than one output may hold (${step.maxOutputFiles})`;
  const maxSize = output.fileCount * step.maxOutputFileBytes;
  if (output.size > maxSize) return `size: ${output.size} is more than ${output.fileCount} files may hold (${maxSize} bytes)`;
  // Deflate adds at most about 0.03% to data it cannot compress.
  const maxZip = Math.ceil(output.size * 1.001) + (output.fileCount + 1) * ZIP_BYTES_PER_FILE;
  if (output.compressedSize > maxZip) return `compressedSize: ${output.compressedSize} is more than a zip of ${output.size} bytes can be`;
  return null;
}

function aliases(step: StepBounds): string {
  return step.outputs.length ? step.outputs.map((o) => o.alias).join(', ') : 'no outputs';
}
