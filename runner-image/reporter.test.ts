import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { RunnerEvent } from '../core/jobs/step-spec.ts';
import { httpReporter } from './reporter.ts';

const FAST = { retryForMs: 2_000, firstDelayMs: 10, maxDelayMs: 50 };
const result: RunnerEvent = { type: 'result', ok: true, ffmpegSeconds: 1, inputBytes: 0, outputs: [] };

describe('httpReporter', () => {
  let server: Server;
  let url: string;
  /** Status codes the server answers with, in order; 200 once they run out. */
  let answers: number[] = [];
  const received: { auth?: string; body: any }[] = [];
  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const status = answers.shift() ?? 200;
        if (status === 200) received.push({ auth: req.headers.authorization, body: JSON.parse(body) });
        // As the API past a Job's request budget (api/middleware/job-event-budget.ts).
        res.writeHead(status, status === 429 ? { 'retry-after': '1' } : {}).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/internal/v1/job-events`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  test('keeps retrying the result while the API answers 503 (a rollout), then delivers it once', async () => {
    answers = [503, 503, 503, 503, 503, 503, 503];
    received.length = 0;
    const reporter = httpReporter(url, 'job-1', 'tok', FAST);
    reporter.send(result);
    assert.equal(await reporter.flush(), true);
    assert.equal(received.length, 1);
    assert.equal(received[0].auth, 'Bearer tok');
    assert.deepEqual(received[0].body, { jobName: 'job-1', event: result });
  });

  test('gives up when the API stays away past the retry time, and says so', async () => {
    answers = Array(1000).fill(503);
    const reporter = httpReporter(url, 'job-2', 'tok', { ...FAST, retryForMs: 200 });
    reporter.send(result);
    assert.equal(await reporter.flush(), false);
    answers = [];
  });

  test('a refusal (4xx) is not retried', async () => {
    answers = [401];
    received.length = 0;
    const reporter = httpReporter(url, 'job-3', 'bad', FAST);
    reporter.send(result);
    assert.equal(await reporter.flush(), false);
    assert.equal(received.length, 0);
    assert.deepEqual(answers, []);
  });

  test("past the Job's request budget (429) a stage or result waits as long as Retry-After says, then goes", async () => {
    answers = [429];
    received.length = 0;
    const reporter = httpReporter(url, 'job-7', 'tok', FAST);
    const sentAt = performance.now();
    reporter.send(result);
    assert.equal(await reporter.flush(), true);
    assert.ok(performance.now() - sentAt >= 990, 'it waited the second the API asked for');
    assert.equal(received.length, 1);
  });

  test('a Retry-After beyond the retry time gives up at once; a progress event answered 429 is dropped', async () => {
    answers = [429, 429];
    received.length = 0;
    const reporter = httpReporter(url, 'job-8', 'tok', { ...FAST, retryForMs: 200 });
    reporter.send({ type: 'progress', outTimeSeconds: 1, speed: 1, durationSeconds: null });
    reporter.send(result);
    assert.equal(await reporter.flush(), false);
    assert.deepEqual(answers, []);
    assert.equal(received.length, 0);
  });

  test('progress is sent once, never retried', async () => {
    answers = [503];
    received.length = 0;
    const reporter = httpReporter(url, 'job-4', 'tok', FAST);
    reporter.send({ type: 'progress', outTimeSeconds: 1, speed: 1, durationSeconds: null });
    reporter.send(result);
    assert.equal(await reporter.flush(), true);
    assert.deepEqual(
      received.map((r) => r.body.event.type),
      ['result'],
    );
  });

  test('progress waiting behind a slow send is replaced by the newest, not queued', async () => {
    received.length = 0;
    const reporter = httpReporter(url, 'job-5', 'tok', FAST);
    const progress = (outTimeSeconds: number): RunnerEvent => ({ type: 'progress', outTimeSeconds, speed: 1, durationSeconds: 10 });
    reporter.send({ type: 'stage', stage: 'FFMPEG_PROCESSING' }); // the first send; the rest wait behind it
    for (let t = 1; t <= 50; t++) reporter.send(progress(t));
    reporter.send(result);
    assert.equal(await reporter.flush(), true);
    assert.deepEqual(
      received.map((r) => r.body.event.outTimeSeconds ?? r.body.event.type),
      ['stage', 50, 'result'],
    );
  });

  test('progress goes out at most once per interval; the held one goes before the next stage, and none after the result', async () => {
    received.length = 0;
    const reporter = httpReporter(url, 'job-6', 'tok', { ...FAST, progressIntervalMs: 60_000 });
    const progress = (outTimeSeconds: number): RunnerEvent => ({ type: 'progress', outTimeSeconds, speed: 1, durationSeconds: 10 });
    reporter.send(progress(1)); // the first goes at once
    assert.equal(await reporter.flush(), true);
    for (let t = 2; t <= 5; t++) reporter.send(progress(t)); // held for the interval, the newest kept
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(
      received.map((r) => r.body.event.outTimeSeconds),
      [1],
      'nothing more within the interval',
    );
    reporter.send({ type: 'stage', stage: 'UPLOADING' });
    reporter.send(result);
    assert.equal(await reporter.flush(), true);
    assert.deepEqual(
      received.map((r) => r.body.event.outTimeSeconds ?? r.body.event.type),
      [1, 5, 'stage', 'result'],
    );
  });
});
