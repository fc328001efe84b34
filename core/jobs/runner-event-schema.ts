// What a runner may report, checked like user input: in cluster mode a hostile command that escaped
// ffmpeg can post its own events with its Job's token, so every field is typed and bounded here, and
// nothing else is accepted. What depends on the step (its outputs, its limits) is result-bounds.ts.
import * as v from 'valibot';
import { ErrorStatus } from '../commands/error-status.ts';
import { COMMAND_LIMITS } from '../command-line/parse.ts';
import { ProcessingStage, type RunnerEvent } from './step-spec.ts';
import { MAX_OUTPUT_PARTS } from './output-parts.ts';

/** About 31 years: any number of seconds beyond is nonsense. */
const MAX_SECONDS = 1e9;
/** Longest error_message a runner may send (ffmpeg's own text is cut at 1,500 characters). */
export const MAX_ERROR_MESSAGE = 8000;
/** Longest media text field (codec, format, mime type, time base...). */
const MAX_MEDIA_TEXT = 200;
const MAX_MEDIA_NUMBER = 1e9;
const MAX_PIXELS_PER_SIDE = 1_000_000;

const bytes = v.pipe(v.number(), v.safeInteger(), v.minValue(0));
const seconds = v.pipe(v.number(), v.finite(), v.minValue(0), v.maxValue(MAX_SECONDS));
const text = (max: number) => v.pipe(v.string(), v.maxLength(max));
const mediaNumber = v.nullable(v.pipe(v.number(), v.finite(), v.minValue(0), v.maxValue(MAX_MEDIA_NUMBER)));
const side = v.nullable(v.pipe(v.number(), v.safeInteger(), v.minValue(0), v.maxValue(MAX_PIXELS_PER_SIDE)));

const mediaSchema = v.strictObject({
  file_type: v.picklist(['video', 'audio', 'image', 'subtitles', 'data', 'other']),
  file_format: v.nullable(text(MAX_MEDIA_TEXT)),
  codec: v.nullable(text(MAX_MEDIA_TEXT)),
  mime_type: v.nullable(text(MAX_MEDIA_TEXT)),
  duration: mediaNumber,
  width: side,
  height: side,
  frame_rate: mediaNumber,
  is_varying_frame_rate: v.nullable(v.boolean()),
  timebase: v.nullable(text(MAX_MEDIA_TEXT)),
  pixel_format: v.nullable(text(MAX_MEDIA_TEXT)),
  bitrate_video_kb: mediaNumber,
  bitrate_audio_kb: mediaNumber,
  video_profile_level: v.nullable(text(MAX_MEDIA_TEXT)),
});

const outputSchema = v.strictObject({
  alias: text(100),
  fileName: text(255),
  size: bytes,
  fileCount: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1))),
  compressedSize: v.optional(bytes),
  media: mediaSchema,
  // Shapes only; result-bounds.ts checks the parts against the output's size.
  upload: v.optional(
    v.strictObject({
      uploadId: text(1024),
      parts: v.pipe(
        v.array(v.strictObject({ partNumber: v.pipe(v.number(), v.safeInteger(), v.minValue(1)), etag: text(130) })),
        v.maxLength(MAX_OUTPUT_PARTS),
      ),
    }),
  ),
});

const stageSchema = v.strictObject({ type: v.literal('stage'), stage: v.picklist(Object.values(ProcessingStage)) });

const progressSchema = v.strictObject({
  type: v.literal('progress'),
  outTimeSeconds: seconds,
  speed: v.nullable(seconds),
  durationSeconds: v.nullable(seconds),
});

const okResultSchema = v.strictObject({
  type: v.literal('result'),
  ok: v.literal(true),
  ffmpegSeconds: seconds,
  inputBytes: bytes,
  // A folder output counts as one; a command declares at most this many.
  outputs: v.pipe(v.array(outputSchema), v.maxLength(COMMAND_LIMITS.maxOutputs)),
  // Optional: an older runner's result has neither.
  downloadSeconds: v.optional(seconds),
  uploadSeconds: v.optional(seconds),
});

const failedResultSchema = v.strictObject({
  type: v.literal('result'),
  ok: v.literal(false),
  errorStatus: v.picklist(Object.values(ErrorStatus)),
  errorMessage: text(MAX_ERROR_MESSAGE),
  ffmpegSeconds: v.nullable(seconds),
  inputBytes: bytes,
  downloadSeconds: v.optional(seconds),
  uploadSeconds: v.optional(seconds),
});

/**
 * Longest piece of ffmpeg's log one event may carry (characters): escaped as JSON it stays within what
 * the job-events route reads (api/routes/job-events.ts). The runner sends pieces at most every 2 s.
 */
export const MAX_LOG_EVENT_CHARS = 16 * 1024;

// Text only: no NUL (PostgreSQL's text cannot hold it) and nothing beyond the size of one piece.
const logSchema = v.strictObject({
  type: v.literal('log'),
  text: v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_LOG_EVENT_CHARS), v.regex(/^[^\0]*$/, 'holds a NUL character')),
});

const kindSchema = v.looseObject({ type: v.picklist(['stage', 'progress', 'result', 'log']), ok: v.optional(v.unknown()) });

export type ParsedRunnerEvent = { ok: true; event: RunnerEvent } | { ok: false; type: string | null; problem: string };

/** The event if it is one a runner may send, or what is wrong with it (the first field at fault). */
export function parseRunnerEvent(value: unknown): ParsedRunnerEvent {
  const kind = v.safeParse(kindSchema, value);
  if (!kind.success) return { ok: false, type: null, problem: describe(kind.issues) };
  const { type, ok } = kind.output;
  const schema =
    type === 'stage'
      ? stageSchema
      : type === 'progress'
        ? progressSchema
        : type === 'log'
          ? logSchema
          : ok === true
            ? okResultSchema
            : failedResultSchema;
  const parsed = v.safeParse(schema, value);
  if (!parsed.success) return { ok: false, type, problem: describe(parsed.issues) };
  return { ok: true, event: parsed.output as RunnerEvent };
}

function describe(issues: [v.BaseIssue<unknown>, ...v.BaseIssue<unknown>[]]): string {
  const issue = issues[0];
  // The message may quote what was received: keep it short (it ends up in the command's error_message).
  const message = issue.message.length > 200 ? `${issue.message.slice(0, 200)}...` : issue.message;
  return `${v.getDotPath(issue) ?? 'event'}: ${message}`;
}
