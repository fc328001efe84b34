// The runner: one command or chain step, in a fresh working folder.
// DOWNLOADING -> PREPARING_INPUT_FILES -> FFMPEG_PROCESSING -> UPLOADING, then one result event.
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ErrorStatus } from '../core/commands/error-status.ts';
import type { OutputResult, RunnerEvent, StepSpec } from '../core/jobs/step-spec.ts';
import { ProcessingStage } from '../core/jobs/step-spec.ts';
import { createAddressPolicy } from '../core/net/address-policy.ts';
import { DownloadError, downloadToFile } from '../core/net/download.ts';
import { fileNameFromUrl, safeLocalName } from '../core/net/file-name.ts';
import { buildFfmpegArgv } from '../core/media/ffmpeg-args.ts';
import { runFfmpeg } from '../core/media/run-ffmpeg.ts';
import { probeMedia } from '../core/media/probe.ts';
import { contentTypeForFileName } from '../core/media/mime.ts';
import type { SandboxMode } from '../core/media/sandbox.ts';
import type { MediaInfo } from '../core/media/media-info.ts';

export interface RunStepOptions {
  workRoot: string;
  emit: (event: RunnerEvent) => void;
  signal: AbortSignal;
  sandbox: SandboxMode;
  ffmpegPath?: string;
  ffprobePath?: string;
  /** rlimit on each file ffmpeg writes. */
  maxOutputFileBytes?: number;
}

class StepFailure extends Error {
  readonly errorStatus: ErrorStatus;
  constructor(errorStatus: ErrorStatus, message: string) {
    super(message);
    this.errorStatus = errorStatus;
  }
}

export async function runStep(spec: StepSpec, o: RunStepOptions): Promise<void> {
  await mkdir(o.workRoot, { recursive: true });
  const dir = await mkdtemp(join(o.workRoot, `step-`));
  let inputBytes = 0;
  let ffmpegSeconds: number | null = null;
  try {
    o.emit({ type: 'stage', stage: ProcessingStage.DOWNLOADING });
    const localPaths = new Map<string, string>();
    const policy = createAddressPolicy(spec.download.allow);
    for (const input of spec.inputs) {
      const name = fileNameFromUrl(input.url);
      if (!name) {
        throw new StepFailure(ErrorStatus.INVALID_INPUT_FILE_NAME, `input ${input.alias}: the URL ${redact(input.url)} does not end in a file name (e.g. .../video.mp4)`);
      }
      const relative = join('in', input.alias, safeLocalName(name));
      await mkdir(join(dir, 'in', input.alias), { recursive: true });
      try {
        const result = await downloadToFile(input.url, join(dir, relative), {
          maxBytes: spec.download.maxBytes,
          timeoutMs: spec.download.timeoutSeconds * 1000,
          policy: input.source === 'storage' ? null : policy,
          signal: o.signal,
        });
        inputBytes += result.bytes;
      } catch (err) {
        if (err instanceof DownloadError) throw new StepFailure(err.errorStatus, `input ${input.alias}: ${err.message}`);
        throw err;
      }
      localPaths.set(input.alias, relative);
    }

    o.emit({ type: 'stage', stage: ProcessingStage.PREPARING_INPUT_FILES });
    for (const output of spec.outputs) {
      await mkdir(join(dir, 'out', output.alias), { recursive: true });
      localPaths.set(output.alias, join('out', output.alias, output.fileName));
    }
    const argv = buildFfmpegArgv(spec.command, (alias) => {
      const path = localPaths.get(alias);
      if (!path) throw new Error(`no local file for ${alias}`);
      return path;
    }, { threads: spec.threads });

    o.emit({ type: 'stage', stage: ProcessingStage.FFMPEG_PROCESSING });
    const run = await runFfmpeg({
      argv,
      cwd: dir,
      timeoutSeconds: spec.timeoutSeconds,
      ffmpegPath: o.ffmpegPath,
      sandbox: o.sandbox,
      signal: o.signal,
      limits: o.maxOutputFileBytes ? { fileSizeBytes: o.maxOutputFileBytes } : undefined,
      onProgress: (p) => o.emit({ type: 'progress', outTimeSeconds: p.outTimeSeconds, speed: p.speed }),
    });
    ffmpegSeconds = run.seconds;
    if (run.timedOut) {
      throw new StepFailure(ErrorStatus.FFMPEG_TIMEOUT, `ffmpeg ran longer than max_command_run_seconds (${spec.timeoutSeconds} s) and was stopped`);
    }
    if (run.aborted) throw new StepFailure(ErrorStatus.INTERRUPTED, 'the step was cancelled while ffmpeg ran');
    if (run.exitCode !== 0) {
      const how = run.signal ? `was killed by ${run.signal}` : `exited with code ${run.exitCode}`;
      throw new StepFailure(ErrorStatus.FFMPEG_FAILED, `ffmpeg ${how}: ${lastLines(run.stderrTail)}`);
    }

    o.emit({ type: 'stage', stage: ProcessingStage.UPLOADING });
    const outputs: OutputResult[] = [];
    for (const output of spec.outputs) {
      const path = join(dir, localPaths.get(output.alias)!);
      const size = await stat(path).then((s) => (s.isFile() ? s.size : 0), () => 0);
      if (size === 0) {
        throw new StepFailure(ErrorStatus.OUTPUT_FILE_NOT_CREATED, `ffmpeg finished but did not write ${output.alias} (${output.fileName}); check that the command writes to {{${output.alias}}}`);
      }
      const media = await probeMedia(path, { ffprobePath: o.ffprobePath }).catch(() => unknownMedia(output.fileName));
      await upload(path, size, output.uploadUrl, media.mime_type ?? contentTypeForFileName(output.fileName), o.signal).catch((err: Error) => {
        throw new StepFailure(ErrorStatus.OUTPUT_UPLOAD_FAILED, `could not store ${output.alias}: ${err.message}`);
      });
      outputs.push({ alias: output.alias, fileName: output.fileName, size, media });
    }
    o.emit({ type: 'result', ok: true, ffmpegSeconds, inputBytes, outputs });
  } catch (err) {
    const failure =
      err instanceof StepFailure ? err : new StepFailure(ErrorStatus.INTERNAL_ERROR, `runner error: ${(err as Error).message}`);
    o.emit({ type: 'result', ok: false, errorStatus: failure.errorStatus, errorMessage: failure.message, ffmpegSeconds, inputBytes });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function upload(path: string, size: number, url: string, contentType: string, signal: AbortSignal): Promise<void> {
  const body = Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array>;
  const res = await fetch(url, {
    method: 'PUT',
    body,
    headers: { 'content-length': String(size), 'content-type': contentType },
    signal,
    duplex: 'half',
  } as RequestInit);
  if (!res.ok) throw new Error(`storage answered HTTP ${res.status}`);
  await res.body?.cancel();
}

function unknownMedia(fileName: string): MediaInfo {
  return {
    file_type: 'other', file_format: null, codec: null, mime_type: contentTypeForFileName(fileName), duration: null,
    width: null, height: null, frame_rate: null, is_varying_frame_rate: null, timebase: null, pixel_format: null,
    bitrate_video_kb: null, bitrate_audio_kb: null, video_profile_level: null,
  };
}

/** The last lines of ffmpeg's stderr: where it says what went wrong. */
function lastLines(text: string): string {
  return text.trim().split('\n').slice(-8).join('\n').slice(-1500);
}

/** URLs in messages lose their query string: it may carry a signature. */
function redact(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(not a URL)';
  }
}
