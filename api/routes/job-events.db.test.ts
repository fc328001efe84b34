// The runner report endpoint of cluster mode, over real HTTP and a real database, attacked with real
// Job tokens: what a hostile command that escaped ffmpeg in its pod could post. No Kubernetes is needed:
// the route reads only the database (the operator turns stored events into command states).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { testCommandRow } from '../commands/testing/test-command-row.ts';
import { AccountsRepo, type Caller } from '../../core/accounts/accounts-repo.ts';
import { PlansRepo } from '../../core/accounts/plans-repo.ts';
import { newCaller } from '../../core/accounts/testing/new-caller.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import type { Database } from '../../core/db/database.ts';
import { openTestDatabase } from '../../core/db/testing/test-database.ts';
import { JobEventsRepo } from '../../core/jobs/job-events-repo.ts';
import { jobName } from '../../core/jobs/job-name.ts';
import { jobToken } from '../../core/jobs/job-token.ts';
import { unknownMedia } from '../../core/media/unknown-media.ts';
import { JobEventBudget } from '../middleware/job-event-budget.ts';
import { listen } from '../app/listen.ts';
import { jobEventRoutes, TOKEN_GRACE_SECONDS } from './job-events.ts';

const secret = randomBytes(32).toString('hex');
const limits = {
  downloadMaxBytes: 1e9,
  downloadTimeoutSeconds: 60,
  uploadAllowanceSeconds: 60,
  maxOutputFileBytes: 2e9,
  maxOutputFiles: 100,
};
let database: Database;
let commands: CommandsRepo;
let events: JobEventsRepo;
let caller: Caller;
let url: string;
let close: () => Promise<void>;
/** The flood test's clock: the budget refills only when the test moves it. */
let budgetNow = 0;

before(async () => {
  database = await openTestDatabase();
  await new PlansRepo(database.db).create({
    name: 'p',
    maxVcpus: 4,
    maxCommandRunSeconds: 600,
    requestsPerMinute: 100,
    storageQuotaBytes: 1e12,
    processingQuotaBytesPerMonth: 1e12,
    privateFiles: true,
  });
  caller = await newCaller(new AccountsRepo(database.db), 'A', 'p');
  commands = new CommandsRepo(database.db);
  events = new JobEventsRepo(database.db);
  const budget = new JobEventBudget({ burst: 20, perSecond: 2, now: () => budgetNow });
  const app = jobEventRoutes({ events, commands, tokenSecret: secret, limits, budget });
  const server = await listen(app.fetch, '127.0.0.1', 0);
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/internal/v1/job-events`;
  close = () => new Promise((res) => server.close(() => res()));
});

after(async () => {
  await close();
  await database.close();
});

/** A command started on its first step, and a runner's way to report for its Job with the Job's token. */
async function runningJob() {
  const row = testCommandRow(caller, { input_files: { in_1: 'https://example.com/in.mp4' }, ffmpeg_command: '-i {{in_1}} {{out_1}}' });
  await commands.insert(row);
  const started = (await commands.startQueued(row.id, { processingStage: 'DOWNLOADING' }, new Date()))!;
  const name = jobName(row.id, 0, started.attempt);
  const post = async (event: unknown, o: { token?: string; body?: string } = {}) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${o.token ?? jobToken(secret, name)}` },
      body: o.body ?? JSON.stringify({ jobName: name, event }),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as { detail: string } };
  };
  const stored = async () => (await events.forJob(name)).map((e) => e.event);
  return { id: row.id, name, post, stored };
}

const success = (output: Record<string, unknown> = {}, top: Record<string, unknown> = {}) => ({
  type: 'result',
  ok: true,
  ffmpegSeconds: 1.5,
  inputBytes: 10,
  outputs: [{ alias: 'out_1', fileName: 'o.mp4', size: 1000, media: unknownMedia('o.mp4'), ...output }],
  ...top,
});

test("a runner's reports are stored as sent, in order", async () => {
  const job = await runningJob();
  const sent = [
    { type: 'stage', stage: 'DOWNLOADING' },
    { type: 'progress', outTimeSeconds: 0.5, speed: 1.2, durationSeconds: 1 },
    { type: 'stage', stage: 'UPLOADING' },
    success(),
  ];
  for (const event of sent) assert.equal((await job.post(event)).status, 200);
  assert.deepEqual(await job.stored(), sent);
});

test('attack: results that cannot be true are refused 422 naming the field, and the step fails saying why', async () => {
  const attacks: [string, unknown, RegExp][] = [
    ['negative output size', success({ size: -1e12 }), /^outputs\.0\.size: /],
    ['negative input bytes', success({}, { inputBytes: -1e12 }), /^inputBytes: /],
    ['huge output size', success({ size: 1e15 }), /^outputs\.0\.size: 1000000000000000 is more than one file may hold/],
    [
      'huge input bytes',
      success({}, { inputBytes: 5e9 }),
      /^inputBytes: 5000000000 is more than the step could download \(1000000000 bytes\)/,
    ],
    ['undeclared alias', success({ alias: 'out_9' }), /^outputs\.0\.alias: "out_9" is not an output of this step \(it writes out_1\)/],
    ['size as a string', success({ size: '1000' }), /^outputs\.0\.size: /],
    ['oversize media text', success({ media: { ...unknownMedia('o.mp4'), codec: 'x'.repeat(50_000) } }), /^outputs\.0\.media\.codec: /],
    ['negative media width', success({ media: { ...unknownMedia('o.mp4'), width: -5 } }), /^outputs\.0\.media\.width: /],
    ['failure with an unknown status', { ...success(), ok: false, errorStatus: 'NOPE', errorMessage: 'x' }, /^errorStatus: /],
  ];
  for (const [name, event, field] of attacks) {
    const job = await runningJob();
    const res = await job.post(event);
    assert.equal(res.status, 422, name);
    assert.match(res.body.detail, field, name);
    const stored = await job.stored();
    assert.equal(stored.length, 1, name);
    const failure = stored[0] as { ok: boolean; errorStatus: string; errorMessage: string; inputBytes: number; ffmpegSeconds: null };
    assert.equal(failure.ok, false, name);
    assert.equal(failure.errorStatus, 'INTERNAL_ERROR', name);
    assert.equal(failure.errorMessage, `the runner's result was refused: ${res.body.detail}`, name);
    assert.deepEqual([failure.inputBytes, failure.ffmpegSeconds], [0, null], `${name}: nothing counts against the quotas`);
    // The refusal is the step's result: the Job's token is spent.
    assert.equal((await job.post(success())).status, 409, name);
  }
});

test('attack: a malformed stage or progress is refused 422 and stores nothing; the step goes on', async () => {
  const job = await runningJob();
  for (const event of [
    { type: 'stage', stage: 'x'.repeat(500) },
    { type: 'progress', outTimeSeconds: -1, speed: null, durationSeconds: null },
    { type: 'progress', outTimeSeconds: 'soon', speed: null, durationSeconds: null },
    { type: 'launch' },
    null,
  ]) {
    const res = await job.post(event);
    assert.equal(res.status, 422, JSON.stringify(event));
  }
  assert.equal((await job.post({}, { body: '{"jobName":' })).status, 422);
  assert.equal((await job.post({}, { body: JSON.stringify({ jobName: job.name, event: success(), extra: 1 }) })).status, 422);
  assert.deepEqual(await job.stored(), []);
  assert.equal((await job.post(success())).status, 200);
});

test('attack: log pieces that are too long, empty, binary (NUL) or not text are refused and store nothing; a good one is stored', async () => {
  const job = await runningJob();
  for (const event of [
    { type: 'log', text: 'x'.repeat(16 * 1024 + 1) },
    { type: 'log', text: '' },
    { type: 'log', text: 'a\u0000b' },
    { type: 'log', text: 42 },
    { type: 'log', text: 'ok', extra: true },
  ]) {
    const res = await job.post(event);
    assert.ok(res.status === 422 || res.status === 413, `${JSON.stringify(event).slice(0, 80)}: ${res.status}`);
  }
  const huge = await job.post({}, { body: JSON.stringify({ jobName: job.name, event: { type: 'log', text: 'x'.repeat(200_000) } }) });
  assert.equal(huge.status, 413);
  assert.deepEqual(await job.stored(), []);
  assert.equal((await job.post({ type: 'log', text: 'frame=  10 fps=0.0\n' })).status, 200);
  assert.deepEqual(await job.stored(), [{ type: 'log', text: 'frame=  10 fps=0.0\n' }]);
});

test('attack: a replay after the result, or after the step ended, is refused 409', async () => {
  const job = await runningJob();
  assert.equal((await job.post(success())).status, 200);
  const replay = await job.post(success({ size: 5 }));
  assert.equal(replay.status, 409);
  assert.match(replay.body.detail, /result of this Job is stored already/);
  assert.equal((await job.post({ type: 'progress', outTimeSeconds: 1, speed: null, durationSeconds: null })).status, 409);
  assert.equal((await job.stored()).length, 1);

  // The operator recorded the result and deleted the Job's events: the command says the step ended.
  await events.deleteForJobs([job.name]);
  await commands.update(job.id, { status: 'SUCCESS' });
  const late = await job.post(success());
  assert.equal(late.status, 409);
  assert.match(late.body.detail, /step of this Job has ended/);

  // A step run again is a new attempt with a new Job: the old attempt's token reports nothing.
  const second = await runningJob();
  await commands.update(second.id, { attempt: 2 });
  assert.equal((await second.post(success())).status, 409);
  assert.deepEqual(await second.stored(), []);
});

test('two results at the same moment: one is stored', async () => {
  const job = await runningJob();
  const statuses = (await Promise.all([job.post(success()), job.post(success()), job.post(success())])).map((r) => r.status).sort();
  assert.deepEqual(statuses, [200, 409, 409]);
  assert.equal((await job.stored()).length, 1);
});

test("attack: a token past its step's deadline and grace is refused 401", async () => {
  const job = await runningJob();
  assert.equal((await job.post({ type: 'stage', stage: 'DOWNLOADING' })).status, 200);
  // The step's deadline: downloads 60 s + max_command_run_seconds 60 s + uploads 60 s.
  const lifetime = 180 + TOKEN_GRACE_SECONDS;
  await database.db.execute(
    sql`update job_events set created_at = now() - make_interval(secs => ${lifetime - 30}) where job_name = ${job.name}`,
  );
  assert.equal((await job.post({ type: 'stage', stage: 'UPLOADING' })).status, 200, 'still within its lifetime');
  await database.db.execute(
    sql`update job_events set created_at = now() - make_interval(secs => ${lifetime + 1}) where job_name = ${job.name}`,
  );
  const expired = await job.post(success());
  assert.equal(expired.status, 401);
  assert.match(expired.body.detail, /job token expired/);
  assert.equal((await job.stored()).length, 2);
});

test('attack: a token of another Job, or none, is refused 401', async () => {
  const job = await runningJob();
  const other = await runningJob();
  assert.equal((await job.post(success(), { token: jobToken(secret, other.name) })).status, 401);
  assert.equal((await job.post(success(), { token: jobToken('another secret', job.name) })).status, 401);
  assert.equal((await job.post(success(), { token: 'x' })).status, 401);
  assert.deepEqual(await job.stored(), []);
});

test('attack: bodies larger than their event type needs are refused 413', async () => {
  const job = await runningJob();
  const padded = await job.post({ type: 'progress', outTimeSeconds: 1, speed: null, durationSeconds: null, pad: 'x'.repeat(2000) });
  assert.equal(padded.status, 413);
  assert.match(padded.body.detail, /a progress event is at most 1024 bytes/);
  const huge = await job.post({}, { body: JSON.stringify({ jobName: job.name, event: { type: 'result', pad: 'x'.repeat(200_000) } }) });
  assert.equal(huge.status, 413);
  assert.deepEqual(await job.stored(), []);
  // A result within the read limit but past its own fails the step, saying so.
  const outputs = success().outputs.map((o) => ({ ...o, media: { ...o.media, codec: 'x'.repeat(100_000) } }));
  const large = await job.post({}, { body: JSON.stringify({ jobName: job.name, event: { ...success(), outputs } }) });
  assert.equal(large.status, 413);
  assert.deepEqual(
    (await job.stored()).map((e) => (e.type === 'result' && !e.ok ? e.errorMessage : e.type)),
    ["the runner's result was refused: a result event is at most 65536 bytes"],
  );
});

test('attack: a flood is held to the Job’s budget with 429 and Retry-After; other Jobs are not held up', async () => {
  const job = await runningJob();
  const progress = (i: number) => ({ type: 'progress', outTimeSeconds: i, speed: null, durationSeconds: null });
  const statuses: number[] = [];
  let retryAfter: string | null = null;
  for (let i = 0; i < 100; i++) {
    const res = await job.post(progress(i));
    statuses.push(res.status);
    if (res.status === 429) retryAfter ??= res.retryAfter;
  }
  assert.equal(statuses.filter((s) => s === 200).length, 20);
  assert.equal(statuses.filter((s) => s === 429).length, 80);
  assert.equal(retryAfter, '1');
  assert.equal((await job.stored()).length, 20);
  const other = await runningJob();
  assert.equal((await other.post(progress(1))).status, 200);
  // Its budget refills with time: after the wait it asked for, the Job reports again.
  budgetNow += Number(retryAfter) * 1000;
  assert.equal((await job.post(success())).status, 200);
});

test('Kueue mode: a pod may report before the operator saw Kueue release its Job', async () => {
  const row = testCommandRow(caller);
  await commands.insert(row);
  const handed = (await commands.queueInCluster(row.id))!;
  const name = jobName(row.id, 0, handed.attempt);
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${jobToken(secret, name)}` },
    body: JSON.stringify({ jobName: name, event: { type: 'stage', stage: 'DOWNLOADING' } }),
  });
  assert.equal(res.status, 200);
});
