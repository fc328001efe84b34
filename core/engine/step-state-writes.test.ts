import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import pino from 'pino';
import { ProcessingStage } from '../jobs/step-spec.ts';
import type { JobRef } from './job-backend.ts';
import { StepStateWrites, type StepState } from './step-state-writes.ts';

const DELAY_MS = 250;
const jobA: JobRef = { name: 'a-0-1', commandId: 'a', step: 0, attempt: 1 };
const jobB: JobRef = { name: 'b-0-1', commandId: 'b', step: 0, attempt: 1 };
const progress = (outTimeSeconds: number) => ({ outTimeSeconds, speed: 1, durationSeconds: 3 });

/** A repository double that records each write and answers it when the test says so. */
class RecordingWritesDouble {
  readonly writes: { job: string; state: StepState }[] = [];
  readonly stored: { job: string; state: StepState }[] = [];
  private readonly answers: ((stored: boolean | Error) => void)[] = [];

  write = (ref: JobRef, state: StepState): Promise<boolean> => {
    this.writes.push({ job: ref.name, state });
    return new Promise((resolve, reject) => this.answers.push((r) => (r instanceof Error ? reject(r) : resolve(r))));
  };

  /** Answers the oldest unanswered write. */
  async answer(result: boolean | Error = true): Promise<void> {
    this.answers.shift()!(result);
    await settle();
  }
}

const settle = () => new Promise<void>((r) => setImmediate(r));

function fixture(t: TestContext) {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const repo = new RecordingWritesDouble();
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
  const writes = new StepStateWrites({
    write: repo.write,
    stored: (ref, state) => repo.stored.push({ job: ref.name, state }),
    delayMs: DELAY_MS,
    logger,
  });
  return { repo, writes, warnings, tick: (ms: number) => t.mock.timers.tick(ms) };
}

test('reports within the delay go out as one write with the newest stage and progress', async (t) => {
  const f = fixture(t);
  f.writes.report(jobA, { processingStage: ProcessingStage.PREPARING_INPUT_FILES });
  f.writes.report(jobA, { processingStage: ProcessingStage.FFMPEG_PROCESSING });
  f.writes.report(jobA, { progress: progress(1) });
  f.writes.report(jobA, { progress: progress(2) });
  f.tick(DELAY_MS - 1);
  assert.deepEqual(f.repo.writes, [], 'held for the delay');
  f.tick(1);
  assert.deepEqual(f.repo.writes, [{ job: jobA.name, state: { processingStage: 'FFMPEG_PROCESSING', progress: progress(2) } }]);
  await f.repo.answer(true);
  assert.deepEqual(f.repo.stored, f.repo.writes);
});

test('UPLOADING goes at once, with what was held', async (t) => {
  const f = fixture(t);
  f.writes.report(jobA, { processingStage: ProcessingStage.FFMPEG_PROCESSING });
  f.writes.report(jobA, { progress: progress(3) });
  f.writes.report(jobA, { processingStage: ProcessingStage.UPLOADING });
  assert.deepEqual(f.repo.writes, [{ job: jobA.name, state: { processingStage: 'UPLOADING', progress: progress(3) } }]);
  await f.repo.answer(true);
  f.tick(DELAY_MS);
  assert.equal(f.repo.writes.length, 1, 'nothing left to write');
});

test('one write per job at a time: what comes meanwhile follows it, newest last', async (t) => {
  const f = fixture(t);
  f.writes.report(jobA, { processingStage: ProcessingStage.UPLOADING });
  f.writes.report(jobA, { progress: progress(1) });
  f.writes.report(jobA, { progress: progress(2) });
  assert.equal(f.repo.writes.length, 1, 'the second waits for the first');
  await f.repo.answer(true);
  f.tick(DELAY_MS);
  assert.deepEqual(f.repo.writes[1], { job: jobA.name, state: { progress: progress(2) } });
  // An UPLOADING that came during a write goes as soon as the write ends.
  f.writes.report(jobA, { processingStage: ProcessingStage.UPLOADING });
  await f.repo.answer(true);
  assert.deepEqual(f.repo.writes[2], { job: jobA.name, state: { processingStage: 'UPLOADING' } });
});

test('jobs do not wait for each other', async (t) => {
  const f = fixture(t);
  f.writes.report(jobA, { processingStage: ProcessingStage.UPLOADING });
  f.writes.report(jobB, { processingStage: ProcessingStage.UPLOADING });
  assert.deepEqual(
    f.repo.writes.map((w) => w.job),
    [jobA.name, jobB.name],
  );
});

test('the result drops what is held of its job', async (t) => {
  const f = fixture(t);
  f.writes.report(jobA, { processingStage: ProcessingStage.FFMPEG_PROCESSING });
  f.writes.report(jobB, { processingStage: ProcessingStage.FFMPEG_PROCESSING });
  f.writes.forget(jobA);
  f.tick(DELAY_MS);
  assert.deepEqual(
    f.repo.writes.map((w) => w.job),
    [jobB.name],
  );
});

test('only stored writes are announced; a failed write is logged and later reports still go', async (t) => {
  const f = fixture(t);
  f.writes.report(jobA, { processingStage: ProcessingStage.UPLOADING });
  await f.repo.answer(false); // the step no longer runs
  f.writes.report(jobB, { processingStage: ProcessingStage.UPLOADING });
  await f.repo.answer(new Error('database away'));
  assert.deepEqual(f.repo.stored, []);
  const warning = JSON.parse(f.warnings.join(''));
  assert.deepEqual([warning.msg, warning.job, warning.err.message], ['could not store the step state', jobB.name, 'database away']);
  f.writes.report(jobB, { progress: progress(5) });
  f.tick(DELAY_MS);
  await f.repo.answer(true);
  assert.deepEqual(f.repo.stored, [{ job: jobB.name, state: { progress: progress(5) } }]);
});

test('flush writes what is held at once and waits for every write in flight', async (t) => {
  const f = fixture(t);
  f.writes.report(jobA, { processingStage: ProcessingStage.UPLOADING });
  f.writes.report(jobA, { progress: progress(1) }); // waits for the write in flight
  f.writes.report(jobB, { progress: progress(2) }); // held for the delay
  let flushed = false;
  const flushing = f.writes.flush().then(() => (flushed = true));
  await settle();
  assert.deepEqual(
    f.repo.writes.map((w) => w.job),
    [jobA.name, jobB.name],
    "B's held report goes without waiting for its delay",
  );
  await f.repo.answer(true); // A's first write ends: its next one goes at once
  assert.deepEqual(f.repo.writes[2], { job: jobA.name, state: { progress: progress(1) } });
  await f.repo.answer(true);
  assert.equal(flushed, false, "A's second write is still in flight");
  await f.repo.answer(true);
  await flushing;
  assert.equal(f.repo.stored.length, 3);
});
