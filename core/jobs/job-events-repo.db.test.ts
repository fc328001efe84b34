// A stored runner event is notified on its channel, so the operator reads it at once (migration 0004);
// a Job stores one result (migration 0010).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { JOB_EVENT_CHANNEL, JobEventsRepo } from './job-events-repo.ts';

test('storing a runner event notifies the job event channel', async () => {
  const database = await openTestDatabase();
  let notified = 0;
  const stop = await database.listen(
    JOB_EVENT_CHANNEL,
    () => notified++,
    () => {},
  );
  try {
    await new JobEventsRepo(database.db).append('ffc-x-0-1', { type: 'stage', stage: 'DOWNLOADING' as never });
    for (const deadline = Date.now() + 5000; notified === 0; await new Promise((r) => setTimeout(r, 10))) {
      if (Date.now() > deadline) assert.fail('no notification within 5 s');
    }
    assert.equal((await new JobEventsRepo(database.db).after(0)).length, 1);
  } finally {
    await stop();
    await database.close();
  }
});

const failure = (errorMessage: string) =>
  ({ type: 'result', ok: false, errorStatus: 'INTERNAL_ERROR', errorMessage, ffmpegSeconds: null, inputBytes: 0 }) as const;

test('a Job stores one result: a second is refused, even at the same moment; other Jobs are apart', async () => {
  const database = await openTestDatabase();
  try {
    const events = new JobEventsRepo(database.db);
    assert.deepEqual(await events.reportState('job-a'), { firstEventAgeSeconds: null, hasResult: false });
    await events.append('job-a', { type: 'stage', stage: 'DOWNLOADING' });
    const state = await events.reportState('job-a');
    assert.equal(state.hasResult, false);
    assert.ok(state.firstEventAgeSeconds !== null && state.firstEventAgeSeconds >= 0);
    const stored = await Promise.all([events.appendResult('job-a', failure('1')), events.appendResult('job-a', failure('2'))]);
    assert.deepEqual(stored.sort(), [false, true]);
    assert.equal(await events.appendResult('job-a', failure('3')), false);
    assert.equal(await events.appendResult('job-b', failure('b')), true);
    assert.equal((await events.reportState('job-a')).hasResult, true);
    assert.equal((await events.forJob('job-a')).filter((e) => e.event.type === 'result').length, 1);
  } finally {
    await database.close();
  }
});

test("forgetting a suspended Job's reports keeps its result and other Jobs' events", async () => {
  const database = await openTestDatabase();
  try {
    const events = new JobEventsRepo(database.db);
    await events.append('job-a', { type: 'stage', stage: 'DOWNLOADING' });
    await events.append('job-a', { type: 'progress', outTimeSeconds: 1, speed: null, durationSeconds: null });
    await events.append('job-b', { type: 'stage', stage: 'DOWNLOADING' });
    await events.forgetReports('job-a');
    assert.deepEqual(await events.reportState('job-a'), { firstEventAgeSeconds: null, hasResult: false });
    assert.equal((await events.forJob('job-b')).length, 1);
    await events.appendResult('job-a', failure('x'));
    await events.forgetReports('job-a');
    assert.equal((await events.reportState('job-a')).hasResult, true);
  } finally {
    await database.close();
  }
});

test('migration 0010 keeps the first of the results a Job had stored twice before it', async () => {
  const database = await openTestDatabase();
  try {
    const events = new JobEventsRepo(database.db);
    await database.db.execute(sql`drop index job_events_one_result_idx`);
    await events.append('job-a', failure('first'));
    await events.append('job-a', failure('replayed'));
    await events.append('job-a', { type: 'stage', stage: 'UPLOADING' });
    await events.append('job-b', failure('b'));
    const migration = await readFile(new URL('../db/migrations/0010_job_event_one_result.sql', import.meta.url), 'utf8');
    for (const statement of migration.split('--> statement-breakpoint')) await database.db.execute(sql.raw(statement));
    const kept = (await events.after(0)).map((e) => [
      e.jobName,
      e.event.type === 'result' && !e.event.ok ? e.event.errorMessage : e.event.type,
    ]);
    assert.deepEqual(kept, [
      ['job-a', 'first'],
      ['job-a', 'stage'],
      ['job-b', 'b'],
    ]);
    assert.equal(await events.appendResult('job-a', failure('again')), false);
  } finally {
    await database.close();
  }
});
