// Large outputs uploaded in parts, end to end but for Kubernetes: the runner's plan request with its
// Job's token (a real route, a real database), its parallel part PUTs to a real S3 server that checks
// signatures (versitygw), and the reconciler's completion of the upload from the result, or its abort
// when the step fails. Hostile plan requests are refused like hostile reports.
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { testCommandRow } from '../commands/testing/test-command-row.ts';
import { AccountsRepo, type Caller } from '../../core/accounts/accounts-repo.ts';
import { PlansRepo } from '../../core/accounts/plans-repo.ts';
import { newCaller } from '../../core/accounts/testing/new-caller.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import type { Database } from '../../core/db/database.ts';
import { openTestDatabase } from '../../core/db/testing/test-database.ts';
import { prepareResult, type ResultContext, type ResultEvent } from '../../core/engine/reconcile/step-results.ts';
import { outputKey, type RunLimits } from '../../core/engine/step-spec-builder.ts';
import { JobEventsRepo } from '../../core/jobs/job-events-repo.ts';
import { jobName, type JobRef } from '../../core/jobs/job-name.ts';
import { jobToken } from '../../core/jobs/job-token.ts';
import type { OutputResult } from '../../core/jobs/step-spec.ts';
import { unknownMedia } from '../../core/media/unknown-media.ts';
import { S3Storage } from '../../core/storage/s3-storage.ts';
import { adminClient, startS3Server, type S3Server } from '../../core/storage/testing/s3-test-server.ts';
import { httpUploadPlans } from '../../runner-image/upload-plans.ts';
import { putParts } from '../../runner-image/put-parts.ts';
import { listen } from '../app/listen.ts';
import { jobEventRoutes } from './job-events.ts';

const MiB = 1024 * 1024;
const secret = randomBytes(32).toString('hex');
// 5 MiB parts from 5 MiB on, so that a 12 MiB output is three parts.
const limits: RunLimits = {
  downloadMaxBytes: 1e9,
  downloadTimeoutSeconds: 60,
  uploadAllowanceSeconds: 60,
  maxOutputFileBytes: 64 * MiB,
  maxOutputFiles: 100,
  allow: [],
  maxThreads: 1,
  outputMultipart: { minBytes: 5 * MiB, minPartBytes: 5 * MiB },
};
let database: Database;
let commands: CommandsRepo;
let caller: Caller;
let s3: S3Server;
let storage: S3Storage;
let bucket: string;
let url: string;
let work: string;
let close: () => Promise<void>;

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
  s3 = await startS3Server();
  bucket = `ffop-test-${randomUUID().slice(0, 8)}`;
  await adminClient(s3.settings).makeBucket(bucket, s3.settings.region);
  storage = new S3Storage({ ...s3.settings, bucket });
  const app = jobEventRoutes({ events: new JobEventsRepo(database.db), commands, tokenSecret: secret, limits, storage });
  const server = await listen(app.fetch, '127.0.0.1', 0);
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/internal/v1/job-uploads`;
  close = () => new Promise((res) => server.close(() => res()));
  work = await mkdtemp(join(tmpdir(), 'job-uploads-'));
});

after(async () => {
  await close();
  await rm(work, { recursive: true, force: true });
  await storage.deletePrefix('public/');
  await adminClient(s3.settings).removeBucket(bucket);
  await s3.stop();
  await database.close();
});

/** A command running its first step, the runner's plan requests for its Job, and its output's key. */
async function runningJob() {
  const row = testCommandRow(caller);
  await commands.insert(row);
  const started = (await commands.startQueued(row.id, { processingStage: 'DOWNLOADING' }, new Date()))!;
  const ref: JobRef = { name: jobName(row.id, 0, started.attempt), commandId: row.id, step: 0, attempt: started.attempt };
  const key = outputKey(started, started.outputs[0]);
  const plans = httpUploadPlans(url, ref.name, jobToken(secret, ref.name), [10]);
  const ask = async (body: Record<string, unknown>, token = jobToken(secret, ref.name)) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ jobName: ref.name, ...body }),
    });
    return { status: res.status, body: (await res.json()) as { detail?: string; partUrls?: string[] } };
  };
  return { ref, key, plans, ask };
}

const ctx = (): ResultContext => ({ commands, storage, limits, workDir: work, onRefused: () => {} });
const success = (output: Partial<OutputResult>): ResultEvent => ({
  type: 'result',
  ok: true,
  ffmpegSeconds: 1,
  inputBytes: 0,
  outputs: [{ alias: 'out_1', fileName: 'o.mp4', size: 1, media: unknownMedia('o.mp4'), ...output }],
});
const failure: ResultEvent = {
  type: 'result',
  ok: false,
  errorStatus: 'OUTPUT_UPLOAD_FAILED',
  errorMessage: 'could not store out_1',
  ffmpegSeconds: 1,
  inputBytes: 0,
};

async function outputFile(bytes: Buffer): Promise<string> {
  const path = join(work, `${randomUUID()}.mp4`);
  await writeFile(path, bytes);
  return path;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

test('a 12 MiB output goes up as three parts and arrives whole; nothing is left unfinished', async () => {
  const job = await runningJob();
  const bytes = randomBytes(12 * MiB + 4321);
  const path = await outputFile(bytes);
  const plan = await job.plans({ alias: 'out_1', size: bytes.length, contentType: 'video/mp4' }, new AbortController().signal);
  assert.equal(plan.partBytes, 5 * MiB);
  assert.equal(plan.partUrls.length, 3);
  const upload = await putParts(plan, path, bytes.length, { signal: new AbortController().signal });

  const prepared = await prepareResult(ctx(), job.ref, success({ size: bytes.length, upload }));
  assert.equal(prepared.problem, null);
  assert.equal(prepared.event.ok, true);
  const chunks: Buffer[] = [];
  for await (const chunk of await storage.read(job.key)) chunks.push(chunk as Buffer);
  assert.equal(sha256(Buffer.concat(chunks)), sha256(bytes));
  assert.deepEqual(await storage.stat(job.key), { size: bytes.length, contentType: 'video/mp4' });
  assert.deepEqual(await storage.unfinishedUploads(job.key), []);
});

test('a step that fails half-way through its parts leaves no upload and no part behind', async () => {
  const job = await runningJob();
  const bytes = randomBytes(12 * MiB);
  const path = await outputFile(bytes);
  const plan = await job.plans({ alias: 'out_1', size: bytes.length, contentType: 'video/mp4' }, new AbortController().signal);
  // Only the first part arrives (the pod's link went down, say); the step fails.
  await putParts({ ...plan, partBytes: 5 * MiB, partUrls: plan.partUrls.slice(0, 1) }, path, 5 * MiB, {
    signal: new AbortController().signal,
  });
  assert.deepEqual(await storage.unfinishedUploads(job.key), [plan.uploadId]);

  const prepared = await prepareResult(ctx(), job.ref, failure);
  assert.equal(prepared.event.ok, false);
  assert.deepEqual(await storage.unfinishedUploads(job.key), []);
  assert.equal(await storage.stat(job.key), null);
});

test('attack: a result whose parts are not the uploaded ones fails the step, and the upload is aborted', async () => {
  const job = await runningJob();
  const bytes = randomBytes(12 * MiB);
  const plan = await job.plans({ alias: 'out_1', size: bytes.length, contentType: 'video/mp4' }, new AbortController().signal);
  const upload = await putParts(plan, await outputFile(bytes), bytes.length, { signal: new AbortController().signal });
  const forged = { ...upload, parts: upload.parts.map((p, i) => (i === 1 ? { ...p, etag: `"${'0'.repeat(32)}"` } : p)) };

  const prepared = await prepareResult(ctx(), job.ref, success({ size: bytes.length, upload: forged }));
  assert.match(prepared.problem ?? '', /could not complete the upload of out_1: .*part 2/);
  assert.equal(await storage.stat(job.key), null);
  assert.deepEqual(await storage.unfinishedUploads(job.key), []);

  // A result claiming more bytes than its parts hold is refused before storage is asked.
  const job2 = await runningJob();
  const prepared2 = await prepareResult(ctx(), job2.ref, success({ size: 30 * MiB, upload }));
  assert.equal(prepared2.event.ok, false);
  assert.match(!prepared2.event.ok ? prepared2.event.errorMessage : '', /upload\.parts: 3 parts listed, 31457280 bytes take 6/);
});

test("attack: plan requests for another output, beyond the step's limits, without the token, or after the step are refused", async () => {
  const job = await runningJob();
  const other = await runningJob();
  const good = { alias: 'out_1', size: 12 * MiB, contentType: 'video/mp4' };
  const refused: [string, Record<string, unknown>, number, RegExp, string?][] = [
    ['undeclared alias', { ...good, alias: 'out_2' }, 422, /alias: not an output of this step/],
    ['larger than an output may be', { ...good, size: 64 * MiB + 1 }, 422, /size: an integer of 1 to 67108864 bytes/],
    ['empty', { ...good, size: 0 }, 422, /size:/],
    ['size as text', { ...good, size: '12' }, 422, /size:/],
    ['bad content type', { ...good, contentType: 'video/mp4\r\nx-amz-acl: public-read' }, 422, /contentType/],
    ['extra field', { ...good, key: 'public/other/o.mp4' }, 422, /nothing else/],
    ["another Job's token", good, 401, /invalid job token/, jobToken(secret, other.ref.name)],
  ];
  for (const [name, body, status, detail, token] of refused) {
    const res = await job.ask(body, token);
    assert.equal(res.status, status, name);
    assert.match(res.body.detail ?? '', detail, name);
  }
  assert.deepEqual(await storage.unfinishedUploads(job.key), [], 'no refused request started an upload');

  await prepareResult(ctx(), job.ref, failure);
  await commands.update(job.ref.commandId, { status: 'FAILED' });
  const late = await job.ask(good);
  assert.equal(late.status, 409);
  assert.deepEqual(await storage.unfinishedUploads(job.key), []);
});
