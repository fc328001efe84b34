// A stored runner event is notified on its channel, so the operator reads it at once (migration 0004).
import assert from 'node:assert/strict';
import { test } from 'node:test';
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
