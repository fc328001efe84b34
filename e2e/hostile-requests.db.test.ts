// Attacks on the running service (embedded mode, real socket): storage URLs with encoded paths as
// inputs, oversized upload parts, deeply nested JSON, guessing API keys. Each must be refused with a
// clear answer, and nothing may be read, written or kept.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { makeClip, startService, type ApiClient, type ServiceFixture } from './harness.ts';

const MiB = 1024 * 1024;

/** A direct upload of `data` (one part per 5 MiB); returns the file id once it is STORED. */
async function upload(api: ApiClient, filename: string, data: Buffer, isPrivate: boolean): Promise<string> {
  const init = await api.post('/v1/files/init-upload', { filename, size_bytes: data.length, part_size: 5 * MiB, is_private: isPrivate });
  assert.equal(init.status, 200, JSON.stringify(init.body));
  const parts = [];
  for (const [i, url] of (init.body.upload_urls as string[]).entries()) {
    const res = await fetch(url, { method: 'PUT', body: new Uint8Array(data.subarray(i * 5 * MiB, (i + 1) * 5 * MiB)) });
    assert.equal(res.status, 200, await res.text());
    parts.push({ part_number: i + 1, etag: res.headers.get('etag') });
  }
  assert.equal((await api.post(`/v1/files/${init.body.file_id}/complete-upload`, { parts })).status, 200);
  for (let i = 0; i < 600; i++) {
    const f = await api.get(`/v1/files/${init.body.file_id}`);
    if (f.body.status === 'STORED') return init.body.file_id;
    assert.notEqual(f.body.status, 'FAILED', JSON.stringify(f.body));
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('upload never STORED');
}

/** A request from a chosen loopback address (127.0.0.0/8 all reach the service), as another client would. */
function requestFrom(
  localAddress: string,
  url: string,
  key: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; retryAfter: string | undefined; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { localAddress, headers: { 'x-api-key': key, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          retryAfter: res.headers['retry-after'],
          body: JSON.parse(Buffer.concat(chunks).toString()),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('hostile requests', () => {
  let svc: ServiceFixture;
  before(async () => {
    svc = await startService();
  });
  after(async () => {
    await svc?.close();
  });

  test('attack: a GET with a 20 MiB body is answered without reading it, and the service keeps answering', async () => {
    const api = svc.client(await svc.newAccount('pro'));
    const answer = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${svc.url}/v1/commands`,
        { method: 'GET', headers: { 'x-api-key': api.key, 'content-length': String(20 * MiB) } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', () => {}); // the service may close the connection before all of it is sent
      req.write(randomBytes(MiB));
      setTimeout(() => req.destroy(), 2000);
      setTimeout(() => reject(new Error('no answer within 10 s')), 10_000).unref();
    });
    assert.equal(answer, 200);
    assert.equal((await api.get('/v1/commands')).status, 200);
  });

  test("attack: an input URL on this service's storage with an encoded path is refused at submit, naming the input", async () => {
    const owner = svc.client(await svc.newAccount('pro'));
    const clip = await readFile(await makeClip(svc.dataDir, 'secret.mp4'));
    const fileId = await upload(owner, 'secret.mp4', clip, true);
    const ownerId = (await svc.service.files.findById(fileId))!.accountId;
    const privatePath = `private/${ownerId}/${fileId}/secret.mp4`;

    const thief = svc.client(await svc.newAccount('pro'));
    const before = (await thief.get('/v1/commands')).body.length;
    for (const path of [
      `public/%2e%2e%2f${privatePath}`, // decodes to public/../private/...: "public" would pass the access check
      `public/..%2F${privatePath}`,
      `public/x%2F..%2F..%2F${privatePath}`,
      `public/${ownerId}/${fileId}/%00secret.mp4`,
      `public/${ownerId}/${fileId}/%E0%A4%A.mp4`, // malformed escape
    ]) {
      const url = `${svc.url}/storage/${path}`;
      for (const [endpoint, body, loc] of [
        [
          '/v1/run-ffmpeg-command',
          { ffmpeg_command: '-i {{in_1}} -c copy {{out_1}}', input_files: { in_1: url }, output_files: { out_1: 'stolen.mp4' } },
          ['body', 'input_files', 'in_1'],
        ],
        [
          '/v1/run-chained-ffmpeg-commands',
          { ffmpeg_commands: ['-i {{in_1}} -c copy {{out_1}}'], input_files: { in_1: url }, output_files: { out_1: 'stolen.mp4' } },
          ['body', 'input_files', 'in_1'],
        ],
        [
          '/v1/run-ffmpeg-command',
          { ffmpeg_command: '-i secret.mp4 -c copy {{out_1}}', input_compressed_folder: url, output_files: { out_1: 'stolen.mp4' } },
          ['body', 'input_compressed_folder'],
        ],
        ['/v1/files/store-file', { file_url: url }, ['body', 'file_url']],
      ] as const) {
        const res = await thief.post(endpoint, body);
        assert.equal(res.status, 422, `${endpoint} ${path}: ${JSON.stringify(res.body)}`);
        assert.deepEqual(res.body.detail[0].loc, loc, path);
        assert.match(res.body.detail[0].msg, /storage URL/, path);
      }
    }
    assert.equal((await thief.get('/v1/commands')).body.length, before, 'a command was created');
    assert.deepEqual((await thief.get('/v1/files')).body, [], 'a file was created');
  });

  test("attack: a 100-byte upload's part URL refuses 40 MiB; nothing is kept and the upload still completes", async () => {
    const api = svc.client(await svc.newAccount('pro'));
    const init = await api.post('/v1/files/init-upload', { filename: 'small.bin', size_bytes: 100 });
    assert.equal(init.status, 200, JSON.stringify(init.body));
    const [url] = init.body.upload_urls as string[];
    const uploadId = (await svc.service.files.findById(init.body.file_id))!.uploadId!;
    const uploadDir = join(svc.dataDir, 'storage', 'uploads', uploadId);

    const big = await fetch(url, { method: 'PUT', body: randomBytes(40 * MiB) }).then(
      async (res) => ({ status: res.status, body: await res.json() }),
      (err: Error & { cause?: { code?: string } }) => ({ status: 0, body: err.cause?.code }),
    );
    assert.equal(big.status, 413, JSON.stringify(big.body));
    assert.match(big.body.detail, /Part 1 is 100 bytes/);
    assert.deepEqual((await readdir(uploadDir)).sort(), ['data', 'upload.json']);
    assert.equal((await stat(join(uploadDir, 'data'))).size, 0);
    // Nothing of the refused body is kept: no temporary file, and the runners' hand-off folder is empty.
    const tmp = join(svc.dataDir, 'storage', 'tmp');
    assert.deepEqual(
      (await readdir(tmp)).filter((name) => name !== 'handoff'),
      [],
    );
    if ((await readdir(tmp)).includes('handoff')) assert.deepEqual(await readdir(join(tmp, 'handoff')), []);

    const data = randomBytes(100);
    const ok = await fetch(url, { method: 'PUT', body: data });
    assert.equal(ok.status, 200);
    const done = await api.post(`/v1/files/${init.body.file_id}/complete-upload`, {
      parts: [{ part_number: 1, etag: ok.headers.get('etag') }],
    });
    assert.equal(done.status, 200, JSON.stringify(done.body));
  });

  test('attack: deeply nested JSON is a 422 on every JSON endpoint, never a 500', async () => {
    const api = svc.client(await svc.newAccount('pro'));
    const deep = '['.repeat(300_000) + ']'.repeat(300_000); // 600 KB, under the 1 MiB body limit
    const fileId = '00000000-0000-4000-8000-000000000000';
    for (const [path, field] of [
      ['/v1/run-ffmpeg-command', 'metadata'],
      ['/v1/run-chained-ffmpeg-commands', 'metadata'],
      ['/v1/files/store-file', 'file_url'],
      ['/v1/files/bulk-delete', 'file_ids'],
      ['/v1/files/init-upload', 'filename'],
      [`/v1/files/${fileId}/complete-upload`, 'parts'],
    ]) {
      const res = await api.request('POST', path, `{"${field}":${deep}}`);
      assert.equal(res.status, 422, `${path}: ${JSON.stringify(res.body).slice(0, 200)}`);
      assert.equal(res.body.detail[0].type, 'json_invalid', path);
      assert.match(res.body.detail[0].msg, /nested deeper than 32 levels/, path);
    }
    // Still serving.
    assert.equal((await api.get('/v1/commands')).status, 200);
  });

  test('attack: guessing API keys from one address is throttled with 429 + Retry-After; known keys and other addresses are not', async () => {
    const url = `${svc.url}/v1/commands`;
    // A client of that address whose key has authenticated before the attack, and one whose key has not.
    const known = await svc.newAccount('pro');
    assert.equal((await requestFrom('127.0.0.3', url, known)).status, 200);
    const unseen = await svc.newAccount('pro');
    for (let i = 0; i < 30; i++) {
      // A forged X-Forwarded-For per attempt does not make the attacker someone else.
      const res = await requestFrom('127.0.0.3', url, `ffo_000000000000_${randomBytes(16).toString('hex')}`, {
        'x-forwarded-for': `198.51.100.${i}`,
      });
      assert.equal(res.status, 401, `attempt ${i + 1}`);
    }
    const limited = await requestFrom('127.0.0.3', url, 'ffo_000000000000_guess');
    assert.equal(limited.status, 429);
    assert.match(limited.body.detail, /Too many failed API key attempts/);
    assert.ok(Number(limited.retryAfter) >= 1 && Number(limited.retryAfter) <= 60, limited.retryAfter);
    // A key this process has not seen authenticate is not looked up from there until the window ends...
    assert.equal((await requestFrom('127.0.0.3', url, unseen)).status, 429);
    // ...one it has seen goes on working...
    assert.equal((await requestFrom('127.0.0.3', url, known)).status, 200);
    // ...and another address is served.
    assert.equal((await requestFrom('127.0.0.4', url, unseen)).status, 200);
    assert.equal((await requestFrom('127.0.0.4', url, 'ffo_000000000000_bad')).status, 401);
  });
});
