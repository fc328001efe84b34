import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile, readFile, stat, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ParsedCommand } from '../command-line/parsed-command.ts';
import { buildFfmpegArgv } from './ffmpeg-args.ts';
import { ffmpegStart, runFfmpeg, type FfmpegProgress } from './run-ffmpeg.ts';
import { probeMedia } from './probe.ts';
import { Unconfined } from '../confine/confinement.ts';
import { handOver } from '../confine/hand-over.ts';
import { isGone } from '../confine/testing/process-outcome.ts';
import { testConfinement } from '../confine/testing/test-confinement.ts';

// These tests are about runFfmpeg itself (process groups, timeouts, progress); the sandbox has tests of
// its own (core/confine). Those that look at host pids run unconfined, the others confined.
const unconfined = new Unconfined();
const limits = { memoryBytes: 4 * 1024 ** 3, cpuSeconds: 600, fileSizeBytes: 10 * 1024 ** 3, openFiles: 1024, processes: 1024 };

/** A lavfi source of `seconds` of video, encoded to the output alias `out`. */
function encodeCommand(source: string, outputOptions: string[] = []): ParsedCommand {
  return {
    globals: [],
    inputs: [{ options: ['-f', 'lavfi'], target: source }],
    outputs: [{ options: ['-c:v', 'libx264', '-pix_fmt', 'yuv420p', ...outputOptions], target: { alias: 'out' } }],
    inputAliases: [],
    outputAliases: ['out'],
  };
}

describe('runFfmpeg', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'run-ffmpeg-test-'));
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('runs a built argv end to end and reports progress', async () => {
    const argv = buildFfmpegArgv(encodeCommand('testsrc=duration=2:size=160x120:rate=25'), (alias) => `${alias}.mp4`, { threads: 1 });
    const progress: FfmpegProgress[] = [];
    const { confinement, uids } = await testConfinement();
    const uid = uids?.acquire();
    if (uid !== undefined) await handOver(dir, uid);
    const result = await runFfmpeg({
      argv,
      folder: dir,
      confinement,
      uid,
      limits,
      timeoutSeconds: 60,
      onProgress: (p) => progress.push(p),
    });
    if (uid !== undefined) uids?.release(uid);

    assert.equal(result.exitCode, 0, result.stderrTail);
    assert.equal(result.signal, null);
    assert.equal(result.timedOut, false);
    assert.equal(result.aborted, false);
    assert.ok(result.seconds > 0);
    assert.ok(progress.length > 0);
    const last = progress.at(-1)!;
    assert.equal(last.frame, 50);
    // the muxed time of the last packet: near the 2 s, never beyond
    assert.ok(last.outTimeSeconds > 1.5 && last.outTimeSeconds <= 2.05, `out time ${last.outTimeSeconds}`);
    assert.ok(last.speed === null || last.speed > 0);

    const info = await probeMedia(join(dir, 'out.mp4'), { confinement, uid });
    assert.equal(info.codec, 'h264');
    assert.equal(info.width, 160);
  });

  test('started ahead of its input (as a runner does while it downloads), ffmpeg reads the input written after', async () => {
    const { confinement, uids } = await testConfinement();
    const uid = uids?.acquire();
    const folder = await mkdtemp(join(dir, 'ahead-'));
    try {
      if (uid !== undefined) await handOver(folder, uid);
      const options = {
        argv: ['-hide_banner', '-nostdin', '-i', 'late.mp4', '-c', 'copy', '-y', 'copy.mkv'],
        folder,
        confinement,
        uid,
        limits,
      };
      const start = ffmpegStart(options);
      assert.equal(start.isHeld, true, 'the test confinement holds starts');
      assert.equal(await start.ready(), true);
      const source = await runFfmpeg({
        argv: buildFfmpegArgv(encodeCommand('testsrc=duration=1:size=160x120:rate=25'), () => 'late.mp4', { threads: 1 }),
        folder,
        confinement: unconfined,
        limits,
        timeoutSeconds: 60,
      });
      assert.equal(source.exitCode, 0, source.stderrTail);
      if (uid !== undefined) await handOver(folder, uid);
      const result = await runFfmpeg({ ...options, start, timeoutSeconds: 60 });
      assert.equal(result.exitCode, 0, result.stderrTail);
      const info = await probeMedia(join(folder, 'copy.mkv'), { confinement, uid });
      assert.equal(info.codec, 'h264');
      assert.equal(info.width, 160);
    } finally {
      if (uid !== undefined) uids?.release(uid);
    }
  });

  test('a timeout stops the whole process group and is reported', { timeout: 60_000 }, async () => {
    // A wrapper that leaves a child of its own in the group, then becomes ffmpeg.
    const wrapper = join(dir, 'ffmpeg-with-child.sh');
    await writeFile(wrapper, '#!/bin/sh\nsleep 1000 &\necho $! > child.pid\nexec ffmpeg "$@"\n');
    await chmod(wrapper, 0o755);
    const argv = ['-hide_banner', '-nostdin', '-nostats', '-progress', 'pipe:1', '-re', '-f', 'lavfi', '-i', 'testsrc', '-f', 'null', '-'];

    const result = await runFfmpeg({ argv, folder: dir, confinement: unconfined, limits, timeoutSeconds: 1, ffmpegPath: wrapper });

    assert.equal(result.timedOut, true);
    assert.equal(result.aborted, false);
    assert.ok(result.exitCode === 255 || result.signal === 'SIGKILL', `exit ${result.exitCode} ${result.signal}`);
    const childPid = Number(await readFile(join(dir, 'child.pid'), 'utf8'));
    assert.ok(await isGone(childPid), `child ${childPid} still running`);
  });

  test('whatever ffmpeg leaves in its group is killed when it exits', { timeout: 60_000 }, async () => {
    // The left-over child holds stdout/stderr open: without the group kill the run would not end.
    const wrapper = join(dir, 'ffmpeg-leaves-child.sh');
    await writeFile(wrapper, '#!/bin/sh\nsleep 1000 &\necho $! > left.pid\nffmpeg "$@"\n');
    await chmod(wrapper, 0o755);
    const argv = ['-hide_banner', '-nostdin', '-f', 'lavfi', '-i', 'testsrc=duration=0.2', '-f', 'null', '-'];

    const result = await runFfmpeg({ argv, folder: dir, confinement: unconfined, limits, timeoutSeconds: 60, ffmpegPath: wrapper });

    assert.equal(result.exitCode, 0, result.stderrTail);
    const leftPid = Number(await readFile(join(dir, 'left.pid'), 'utf8'));
    assert.ok(await isGone(leftPid), `left-over ${leftPid} still running`);
  });

  test('an abort stops the run and is reported as aborted', { timeout: 60_000 }, async () => {
    const controller = new AbortController();
    const argv = ['-nostdin', '-nostats', '-progress', 'pipe:1', '-re', '-f', 'lavfi', '-i', 'testsrc', '-f', 'null', '-'];
    const result = await runFfmpeg({
      argv,
      folder: dir,
      confinement: unconfined,
      limits,
      timeoutSeconds: 60,
      signal: controller.signal,
      onProgress: () => controller.abort(),
    });
    assert.equal(result.aborted, true);
    assert.equal(result.timedOut, false);
    assert.equal(result.exitCode, 255);

    const before = await runFfmpeg({ argv, folder: dir, confinement: unconfined, limits, timeoutSeconds: 60, signal: AbortSignal.abort() });
    assert.equal(before.aborted, true);
    assert.equal(before.exitCode, null);
  });

  test("a failing command: exit code and the tail of ffmpeg's error text", async () => {
    const result = await runFfmpeg({
      argv: ['-hide_banner', '-nostdin', '-i', 'missing.mp4', 'out.mkv'],
      folder: dir,
      confinement: unconfined,
      limits,
      timeoutSeconds: 60,
    });
    assert.equal(result.exitCode, 1);
    assert.equal(result.timedOut, false);
    assert.match(result.stderrTail, /missing\.mp4: No such file or directory/);

    const verbose = await runFfmpeg({
      argv: ['-loglevel', 'debug', '-nostdin', '-f', 'lavfi', '-i', 'testsrc=duration=0.2', '-f', 'null', '-', '-i'],
      folder: dir,
      confinement: unconfined,
      limits,
      timeoutSeconds: 60,
      stderrTailBytes: 200,
    });
    assert.notEqual(verbose.exitCode, 0);
    assert.ok(Buffer.byteLength(verbose.stderrTail) <= 200, `${Buffer.byteLength(verbose.stderrTail)} bytes kept`);
    assert.match(verbose.stderrTail, /Argument 'i' provided as input filename, but '-' was already specified|missing argument/i);
  });

  test('the file size limit kills a run that writes too much', { timeout: 60_000 }, async () => {
    const argv = ['-nostdin', '-y', '-f', 'lavfi', '-i', 'testsrc=duration=20', '-c:v', 'rawvideo', '-f', 'nut', 'big.nut'];
    const result = await runFfmpeg({
      argv,
      folder: dir,
      confinement: unconfined,
      limits: { ...limits, fileSizeBytes: 100_000 },
      timeoutSeconds: 60,
    });
    assert.equal(result.signal, 'SIGXFSZ');
    assert.ok((await stat(join(dir, 'big.nut'))).size <= 100_000);
  });

  test('an ffmpeg that cannot start fails with its reason; a run without a time limit is an error', async () => {
    await assert.rejects(
      runFfmpeg({ argv: ['-version'], folder: dir, confinement: unconfined, limits, timeoutSeconds: 0 }),
      /timeoutSeconds must be positive/,
    );
    await assert.rejects(
      runFfmpeg({ argv: ['-version'], folder: dir, confinement: unconfined, limits, timeoutSeconds: Number.NaN }),
      /timeoutSeconds must be positive/,
    );
    const { confinement } = await testConfinement();
    for (const c of [unconfined, confinement]) {
      const missing = await runFfmpeg({
        argv: [],
        folder: dir,
        confinement: c,
        uid: 3_000_999,
        limits,
        timeoutSeconds: 5,
        ffmpegPath: '/usr/bin/no-such-ffmpeg',
      });
      assert.notEqual(missing.exitCode, 0);
      assert.match(missing.stderrTail, /no-such-ffmpeg.*No such file/);
    }
  });
});
