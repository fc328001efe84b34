import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { httpUploadPlans, uploadPlansUrl } from './upload-plans.ts';

/** The API stand-in: `answer` gets each request's number (from 1) and its JSON body. */
async function apiServer(answer: (n: number, body: Record<string, unknown>, res: ServerResponse) => void) {
  let n = 0;
  const seen: { auth: string | undefined; body: Record<string, unknown> }[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      seen.push({ auth: req.headers.authorization, body });
      answer(++n, body, res);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/internal/v1/job-uploads`;
  return { url, seen, close: () => new Promise((r) => server.close(r)) };
}

const plan = { uploadId: 'u-1', partBytes: 5, partUrls: ['http://s3.test/b/k?partNumber=1', 'http://s3.test/b/k?partNumber=2'] };
const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
const request = { alias: 'out_1', size: 9, contentType: 'video/mp4' };

test('the plans URL sits next to the job-events URL', () => {
  assert.equal(uploadPlansUrl('http://api:8080/internal/v1/job-events'), 'http://api:8080/internal/v1/job-uploads');
});

test("the request carries the Job's name and token; a 503 and a 429 are tried again, then the plan is returned", async () => {
  const api = await apiServer((n, _body, res) => {
    if (n === 1) return json(res, 503, { detail: 'rolling out' });
    if (n === 2) return json(res, 429, { detail: 'too many' }, { 'retry-after': '0' });
    json(res, 200, plan);
  });
  try {
    const got = await httpUploadPlans(api.url, 'ffc-x-s0-a1', 'tok', [5, 5, 5])(request, new AbortController().signal);
    assert.deepEqual(got, plan);
    assert.equal(api.seen.length, 3);
    assert.deepEqual(api.seen[0], { auth: 'Bearer tok', body: { jobName: 'ffc-x-s0-a1', ...request } });
  } finally {
    await api.close();
  }
});

test('a refusal (4xx) is not tried again, and its detail is the reason', async () => {
  const api = await apiServer((_n, _body, res) => json(res, 422, { detail: 'alias: not an output of this step' }));
  try {
    await assert.rejects(httpUploadPlans(api.url, 'j', 't', [5, 5])(request, new AbortController().signal), /HTTP 422.*not an output/);
    assert.equal(api.seen.length, 1);
  } finally {
    await api.close();
  }
});

test('attack: an answer that is not a plan (a URL that is not http) is refused', async () => {
  const api = await apiServer((_n, _body, res) => json(res, 200, { ...plan, partUrls: ['file:///etc/passwd'] }));
  try {
    await assert.rejects(httpUploadPlans(api.url, 'j', 't', [])(request, new AbortController().signal), /not a plan/);
  } finally {
    await api.close();
  }
});

test('a 5xx every time: the last reason after the last try', async () => {
  const api = await apiServer((_n, _body, res) => json(res, 500, { detail: 'boom' }));
  try {
    await assert.rejects(httpUploadPlans(api.url, 'j', 't', [5, 5])(request, new AbortController().signal), /HTTP 500/);
    assert.equal(api.seen.length, 3);
  } finally {
    await api.close();
  }
});
