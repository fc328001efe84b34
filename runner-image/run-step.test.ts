import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { ErrorStatus } from '../core/commands/error-status.ts';
import { Unconfined } from '../core/confine/confinement.ts';
import { testConfinement } from '../core/confine/testing/test-confinement.ts';
import type { RunnerEvent, StepSpec } from '../core/jobs/step-spec.ts';
import { runStep, type RunStepOptions } from './run-step.ts';
import { makeClip, startFileServer, stepSpec, zipBuffer, zipEntryNames, type FileServer } from './testing/runner-fixtures.ts';

type Result = Extract<RunnerEvent, { type: 'result' }>;

/**
 * The processes this test process started that are still there, once the ones being stopped are gone
 * (polled for a while). A step must leave none: not its ffmpeg, nor a start held for a later stage.
 */
async function processesLeft(): Promise<string[]> {
  const list = async () =>
    (await readFile(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8')).trim().split(/\s+/).filter(Boolean);
  for (let i = 0; i < 500 && (await list()).length > 0; i++) await new Promise((r) => setTimeout(r, 10));
  return Promise.all((await list()).map(async (pid) => `${pid} ${await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '?')}`));
}

/** Stands in for main.ts's stdout: keeps every event runStep emits, in order. */
class RecordingReporter {
  readonly events: RunnerEvent[] = [];
  readonly emit = (event: RunnerEvent): void => void this.events.push(event);

  /** Stages and the result, each progress run shown once: 'DOWNLOADING', ..., 'progress', ..., 'result' (the log: logText). */
  sequence(): string[] {
    const labels = this.events.filter((e) => e.type !== 'log').map((e) => (e.type === 'stage' ? e.stage : e.type));
    return labels.filter((label, i) => label !== 'progress' || labels[i - 1] !== 'progress');
  }

  /** ffmpeg's log as the step sent it. */
  logText(): string {
    return this.events.map((e) => (e.type === 'log' ? e.text : '')).join('');
  }

  result(): Result {
    const results = this.events.filter((e): e is Result => e.type === 'result');
    assert.equal(results.length, 1, `one result, got ${JSON.stringify(this.events)}`);
    return results[0];
  }
}

describe('runStep', () => {
  let server: FileServer;
  let clip: Buffer;
  let workRoot: string;

  before(async () => {
    server = await startFileServer();
    const media = await mkdtemp(join(tmpdir(), 'runner-step-media-'));
    clip = await readFile(await makeClip(media));
    await rm(media, { recursive: true });
    server.files.set('/media/clip.mp4', clip);
  });
  after(() => server.close());
  beforeEach(async () => {
    workRoot = await mkdtemp(join(tmpdir(), 'runner-step-work-'));
    server.uploads.clear();
  });
  afterEach(() => rm(workRoot, { recursive: true, force: true }));

  /** Runs the step confined, as main.ts would (as root: as a uid of its own), and records its events. */
  async function run(spec: StepSpec, options: Partial<RunStepOptions> = {}): Promise<RecordingReporter> {
    const reporter = new RecordingReporter();
    const { confinement, uids } = await testConfinement();
    const uid = uids?.acquire();
    try {
      await runStep(spec, { workRoot, emit: reporter.emit, signal: new AbortController().signal, confinement, uid, ...options });
    } finally {
      if (uid !== undefined) uids?.release(uid);
    }
    // Whatever happened, the step's working folder is gone, and so is every process it started.
    assert.deepEqual(await readdir(workRoot), []);
    assert.deepEqual(await processesLeft(), []);
    return reporter;
  }

  const clipInput = () => ({ alias: 'in_1', url: `${server.url}/media/clip.mp4`, source: 'external' as const });
  const fileOutput = (alias: string, fileName: string) => ({
    alias,
    fileName,
    kind: 'file' as const,
    uploadUrl: `${server.url}/put/${alias}`,
  });

  test('a step reports its stages in order, progress while ffmpeg runs, then the probed outputs it stored', async () => {
    const spec = stepSpec('-i {{in_1}} -vf scale=32:24 -c:v libx264 -preset ultrafast {{out_1}}', {
      inputs: [clipInput()],
      outputs: [fileOutput('out_1', 'small.mp4')],
      allow: [server.allowEntry],
    });
    const reporter = await run(spec);
    assert.deepEqual(reporter.sequence(), ['DOWNLOADING', 'PREPARING_INPUT_FILES', 'FFMPEG_PROCESSING', 'progress', 'UPLOADING', 'result']);
    // ffmpeg's own output went out as log events, sent before the result, without this machine's paths.
    assert.match(reporter.logText(), /Output #0/);
    assert.ok(reporter.events.findIndex((e) => e.type === 'log') < reporter.events.findIndex((e) => e.type === 'result'));
    // The 1 s clip's duration, as ffmpeg printed it, is what progress is measured against.
    const progress = reporter.events.filter((e) => e.type === 'progress');
    assert.ok(
      progress.every((e) => e.durationSeconds === 1 && e.outTimeSeconds >= 0),
      JSON.stringify(progress),
    );
    const result = reporter.result();
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.inputBytes, clip.length);
    assert.ok(result.ffmpegSeconds > 0);
    // The runner's own phases, for the command's timings.
    assert.ok(typeof result.downloadSeconds === 'number' && result.downloadSeconds >= 0, JSON.stringify(result));
    assert.ok(typeof result.uploadSeconds === 'number' && result.uploadSeconds >= 0, JSON.stringify(result));
    assert.equal(result.outputs.length, 1);
    const [output] = result.outputs;
    assert.deepEqual(
      [output.alias, output.fileName, output.media.width, output.media.height, output.media.codec],
      ['out_1', 'small.mp4', 32, 24, 'h264'],
    );
    assert.ok(Math.abs(output.media.duration! - 1) < 0.2, `duration ${output.media.duration}`);
    assert.equal(server.uploads.get('/put/out_1')?.body.length, output.size);
  });

  test('a failing ffmpeg ends FFMPEG_FAILED with the cause on the first line, and stores nothing', async () => {
    const spec = stepSpec('-i {{in_1}} -map 0:s {{out_1}}', {
      inputs: [clipInput()],
      outputs: [fileOutput('out_1', 'subs.srt')],
      allow: [server.allowEntry],
    });
    const reporter = await run(spec);
    assert.deepEqual(reporter.sequence(), ['DOWNLOADING', 'PREPARING_INPUT_FILES', 'FFMPEG_PROCESSING', 'result']);
    assert.ok(reporter.logText().length > 0, "ffmpeg's error is in its log");
    const result = reporter.result();
    assert.ok(!result.ok);
    assert.equal(result.errorStatus, ErrorStatus.FFMPEG_FAILED);
    assert.match(result.errorMessage.split('\n')[0], /^ffmpeg exited with code \d+: Stream map '0:s' matches no streams\./);
    assert.equal(result.inputBytes, clip.length);
    assert.notEqual(result.ffmpegSeconds, null);
    // Downloaded, never uploaded: only the phase it reached is reported.
    assert.ok(typeof result.downloadSeconds === 'number' && result.downloadSeconds >= 0);
    assert.equal(result.uploadSeconds, undefined);
    assert.equal(server.uploads.size, 0);
  });

  test("a chain step reads an earlier step's output from storage (no allow entry needed) and stores only its own", async () => {
    server.files.set('/storage/step0/small.mp4', clip);
    const spec = stepSpec('-i {{out_1}} -vf hflip -c:v libx264 -preset ultrafast {{out_2}}', {
      step: 1,
      inputs: [{ alias: 'out_1', url: `${server.url}/storage/step0/small.mp4?X-Amz-Signature=s`, source: 'storage' }],
      earlierOutputAliases: ['out_1'],
      outputs: [fileOutput('out_2', 'flipped.mp4')],
    });
    const result = (await run(spec)).result();
    assert.ok(result.ok, JSON.stringify(result));
    assert.deepEqual(
      result.outputs.map((o) => [o.alias, o.fileName, o.media.width]),
      [['out_2', 'flipped.mp4', 64]],
    );
    assert.deepEqual([...server.uploads.keys()], ['/put/out_2']);
  });

  test('files extracted from the input archive are not part of OUTPUT_FOLDER; what ffmpeg wrote is', async () => {
    server.files.set('/pack.zip', await zipBuffer({ 'notes.txt': 'read by nobody', 'fonts/readme.txt': 'x' }));
    const spec = stepSpec('-i {{in_1}} -vf fps=2 -frames:v 2 frame_%02d.png', {
      inputs: [clipInput()],
      archive: { url: `${server.url}/pack.zip`, source: 'external' },
      outputs: [{ alias: 'OUTPUT_FOLDER', fileName: 'output_folder.zip', kind: 'folder', uploadUrl: `${server.url}/put/folder` }],
      allow: [server.allowEntry],
    });
    const result = (await run(spec)).result();
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.outputs[0].fileCount, 2);
    assert.deepEqual(await zipEntryNames(server.uploads.get('/put/folder')!.body), ['frame_01.png', 'frame_02.png']);
  });

  // Raw video: about 9 KB a frame, so 300 frames pass 1 MiB quickly.
  const tooBig = () =>
    stepSpec('-f lavfi -i testsrc=size=64x48:rate=100:duration=3 -c:v rawvideo {{out_1}}', { outputs: [fileOutput('out_1', 'raw.nut')] });
  const fileLimitMessage = /^ffmpeg was stopped: an output file grew past the limit of 1 MiB per file/;

  test('an output file growing past the per-file limit stops ffmpeg and says which limit (unconfined)', async () => {
    const result = (await run(tooBig(), { maxOutputFileBytes: 1024 ** 2, confinement: new Unconfined() })).result();
    assert.ok(!result.ok);
    assert.equal(result.errorStatus, ErrorStatus.FFMPEG_FAILED);
    assert.match(result.errorMessage, fileLimitMessage);
    assert.equal(server.uploads.size, 0);
  });

  test('the same, confined (bubblewrap reports the signal as exit code 128 + its number)', async () => {
    const result = (await run(tooBig(), { maxOutputFileBytes: 1024 ** 2 })).result();
    assert.ok(!result.ok);
    assert.equal(result.errorStatus, ErrorStatus.FFMPEG_FAILED);
    assert.match(result.errorMessage, fileLimitMessage);
  });

  test('ffmpeg running past max_command_run_seconds ends FFMPEG_TIMEOUT', async () => {
    const spec = stepSpec('-re -f lavfi -i testsrc=size=64x48:rate=10:duration=30 -c:v libx264 -preset ultrafast {{out_1}}', {
      outputs: [fileOutput('out_1', 'long.mp4')],
      timeoutSeconds: 1,
    });
    const result = (await run(spec)).result();
    assert.ok(!result.ok);
    assert.equal(result.errorStatus, ErrorStatus.FFMPEG_TIMEOUT);
    assert.match(result.errorMessage, /max_command_run_seconds \(1 s\)/);
    assert.ok(result.ffmpegSeconds !== null && result.ffmpegSeconds >= 1);
  });

  test('a refused download ends the step there: no ffmpeg, no later stage', async () => {
    const spec = stepSpec('-i {{in_1}} {{out_1}}', { inputs: [clipInput()], outputs: [fileOutput('out_1', 'a.mp4')] });
    const reporter = await run(spec);
    assert.deepEqual(reporter.sequence(), ['DOWNLOADING', 'result']);
    const result = reporter.result();
    assert.ok(!result.ok);
    assert.equal(result.errorStatus, ErrorStatus.FORBIDDEN_INPUT_ADDRESS);
    assert.deepEqual([result.ffmpegSeconds, result.inputBytes], [null, 0]);
  });

  test('a step stopped from outside reports no result of its own (the one who stopped it does)', async () => {
    server.stalled.add('/media/endless.mp4');
    const spec = stepSpec('-i {{in_1}} {{out_1}}', {
      inputs: [{ alias: 'in_1', url: `${server.url}/media/endless.mp4`, source: 'external' }],
      outputs: [fileOutput('out_1', 'a.mp4')],
      allow: [server.allowEntry],
    });
    const stop = new AbortController();
    const reporter = new RecordingReporter();
    const emit = (event: RunnerEvent) => {
      reporter.emit(event);
      if (event.type === 'stage') setTimeout(() => stop.abort(), 50); // while the download waits for its body
    };
    const { confinement, uids } = await testConfinement();
    const uid = uids?.acquire();
    try {
      await runStep(spec, { workRoot, emit, signal: stop.signal, confinement, uid });
    } finally {
      if (uid !== undefined) uids?.release(uid);
    }
    assert.deepEqual(reporter.sequence(), ['DOWNLOADING']);
    assert.deepEqual(await readdir(workRoot), []);
    assert.deepEqual(await processesLeft(), [], 'the ffmpeg held for after the download is stopped');
  });
});
