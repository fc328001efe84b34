import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CommandRow, FileRow } from '../../core/commands/commands-repo.ts';
import { conditionsOf, outputOf, refusedStatus, statusOf } from './command-status.ts';

const created = new Date('2026-11-28T10:00:00.000Z');
const started = new Date('2026-11-28T10:00:02.000Z');
const finished = new Date('2026-11-28T10:00:07.500Z');

/** A command row with only the columns a status is made of. */
function row(over: Partial<CommandRow>): CommandRow {
  return {
    id: 'c-1',
    environmentName: 'main',
    status: 'QUEUED',
    processingStage: null,
    currentStep: 0,
    attempt: 0,
    steps: [{}, {}],
    createdAt: created,
    startedAt: null,
    stepStartedAt: null,
    finishedAt: null,
    errorStatus: null,
    errorMessage: null,
    queueReason: null,
    progress: null,
    ...over,
  } as unknown as CommandRow;
}

const byType = (c: ReturnType<typeof conditionsOf>) =>
  Object.fromEntries(c.map((x) => [x.type, [x.status, x.reason, x.lastTransitionTime]]));

test('conditions follow the command: queued, running, succeeded; times come from the row, so a rewrite moves none', () => {
  assert.deepEqual(byType(conditionsOf(row({}))), {
    Accepted: ['True', 'Accepted', created.toISOString()],
    Running: ['False', 'Queued', created.toISOString()],
    Succeeded: ['False', 'NotFinished', created.toISOString()],
    Failed: ['False', 'NotFinished', created.toISOString()],
  });
  const running = row({
    status: 'PROCESSING',
    processingStage: 'FFMPEG_PROCESSING',
    startedAt: started,
    stepStartedAt: started,
    currentStep: 1,
  });
  const c = conditionsOf(running, 1);
  assert.deepEqual(byType(c).Running, ['True', 'FFMPEG_PROCESSING', started.toISOString()]);
  assert.equal(c.find((x) => x.type === 'Running')!.message, 'step 2 of 2: FFMPEG_PROCESSING');
  assert.ok(c.every((x) => x.observedGeneration === 1));
  assert.deepEqual(conditionsOf(running, 1), c);
  const done = byType(conditionsOf(row({ status: 'SUCCESS', startedAt: started, finishedAt: finished })));
  assert.deepEqual(done.Succeeded, ['True', 'Succeeded', finished.toISOString()]);
  assert.deepEqual(done.Running, ['False', 'Finished', finished.toISOString()]);
  assert.deepEqual(done.Failed, ['False', 'Succeeded', finished.toISOString()]);
});

test('a failure is condition Failed with the error status as its reason and the message as it is', () => {
  const failed = conditionsOf(
    row({ status: 'FAILED', finishedAt: finished, errorStatus: 'FFMPEG_FAILED', errorMessage: 'Unknown encoder x' }),
  );
  const cond = failed.find((x) => x.type === 'Failed')!;
  assert.deepEqual([cond.status, cond.reason, cond.message], ['True', 'FFMPEG_FAILED', 'Unknown encoder x']);
  assert.equal(failed.find((x) => x.type === 'Succeeded')!.status, 'False');
});

test('the status mirrors the row: phase, step, job, times, duration; a QUEUED command has no Job', () => {
  const s = statusOf(
    row({ status: 'PROCESSING', processingStage: 'UPLOADING', startedAt: started, currentStep: 1, attempt: 2 }),
    [],
    new Date('2026-11-28T10:00:04.000Z'),
  );
  assert.equal(s.commandId, 'c-1');
  assert.equal(s.phase, 'PROCESSING');
  assert.deepEqual(s.jobNames, ['ffc-c-1-s1-a2']);
  assert.equal(s.durationSeconds, 4);
  assert.equal(s.startedAt, started.toISOString());
  assert.deepEqual(statusOf(row({}), [], created).jobNames, []);
});

test("an output is the poll record's entry camelCased; what is not known is left out", () => {
  const file = {
    id: 'f-1',
    alias: 'out_1',
    fileName: 'a.mp4',
    storageKey: 'k/a.mp4',
    sizeBytes: 3 * 1024 * 1024,
    fileCount: null,
    isPrivate: false,
    media: { file_type: 'video', codec: 'h264', width: 160, height: 90, duration: 2.5, frame_rate: 25, bitrate_audio_kb: null },
  } as unknown as FileRow;
  assert.deepEqual(outputOf(file, 'https://h/k/a.mp4'), {
    alias: 'out_1',
    fileId: 'f-1',
    fileName: 'a.mp4',
    sizeBytes: 3145728,
    storageKey: 'k/a.mp4',
    storageUrl: 'https://h/k/a.mp4',
    fileCount: 1,
    isPrivate: false,
    sizeMbytes: 3,
    fileType: 'video',
    codec: 'h264',
    width: 160,
    height: 90,
    duration: 2.5,
    frameRate: 25,
  });
});

test('a refused resource is FAILED with the refusal as status, reason and message, and never accepted', () => {
  const s = refusedStatus('NAMESPACE_NOT_BOUND', 'namespace x is not bound', created, finished, 1);
  assert.equal(s.phase, 'FAILED');
  assert.equal(s.errorStatus, 'NAMESPACE_NOT_BOUND');
  assert.equal(s.commandId, undefined);
  assert.deepEqual(
    s.conditions!.map((c) => [c.type, c.status, c.reason]),
    [
      ['Accepted', 'False', 'NamespaceNotBound'],
      ['Running', 'False', 'Refused'],
      ['Succeeded', 'False', 'Refused'],
      ['Failed', 'True', 'NamespaceNotBound'],
    ],
  );
  assert.equal(s.durationSeconds, 7.5);
});
