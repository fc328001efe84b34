// Direct multipart uploads through presigned part URLs, abort, the 7-day cleanup, quotas, rate limits.
import { after, before, describe, test } from 'node:test';
import { testConfinement } from '../core/confine/testing/test-confinement.ts';
import { FileProber } from '../core/media/file-prober.ts';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { createLogger } from '../core/logger.ts';
import { FileTasks } from '../core/engine/file-tasks.ts';
import { startService, type ApiClient, type ServiceFixture } from './harness.ts';

const MiB = 1024 * 1024;

async function putParts(urls: string[], data: Buffer, partSize: number, skip: number[] = []): Promise<string[]> {
  const etags: string[] = [];
  for (let i = 0; i < urls.length; i++) {
    if (skip.includes(i + 1)) {
      etags.push('"skipped"');
      continue;
    }
    const res = await fetch(urls[i], { method: 'PUT', body: new Uint8Array(data.subarray(i * partSize, (i + 1) * partSize)) });
    assert.equal(res.status, 200, await res.text());
    etags.push(res.headers.get('etag')!);
  }
  return etags;
}

async function waitStored(api: ApiClient, id: string) {
  for (let i = 0; i < 600; i++) {
    const r = await api.get(`/v1/files/${id}`);
    if (r.body.status === 'STORED' || r.body.status === 'FAILED') return r.body;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error('not stored');
}

describe('direct uploads', () => {
  let svc: ServiceFixture;
  before(async () => {
    svc = await startService();
  });
  after(async () => {
    await svc?.close();
  });

  test('a 12 MB upload in three parts: UPLOADED at once, then STORED; the bytes come back equal', async () => {
    const api = svc.client();
    const data = randomBytes(12 * MiB);
    const init = await api.post('/v1/files/init-upload', { filename: 'big.bin', size_bytes: data.length, part_size: 5 * MiB });
    assert.equal(init.status, 200, JSON.stringify(init.body));
    assert.equal(init.body.part_size, 5 * MiB);
    assert.equal(init.body.upload_urls.length, 3);
    const etags = await putParts(init.body.upload_urls, data, init.body.part_size);
    const done = await api.post(`/v1/files/${init.body.file_id}/complete-upload`, {
      parts: etags.map((etag, i) => ({ part_number: i + 1, etag })),
    });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal(done.body.status, 'UPLOADED');
    const stored = await waitStored(api, init.body.file_id);
    assert.equal(stored.status, 'STORED');
    assert.equal(stored.original_file_url, 'big.bin');
    assert.ok(Math.abs(stored.size_mbytes - data.length / 1e6) < 1e-6);
    const back = Buffer.from(await (await fetch(stored.storage_url)).arrayBuffer());
    assert.ok(back.equals(data), 'downloaded bytes differ from the upload');
  });

  test('part_size is raised to 5 MiB and a tiny upload is one part', async () => {
    const api = svc.client();
    const init = await api.post('/v1/files/init-upload', { filename: 'small.txt', size_bytes: 5, part_size: 10 });
    assert.equal(init.body.part_size, 5 * MiB);
    assert.equal(init.body.upload_urls.length, 1);
    const [etag] = await putParts(init.body.upload_urls, Buffer.from('hello'), init.body.part_size);
    assert.equal((await api.post(`/v1/files/${init.body.file_id}/complete-upload`, { parts: [{ part_number: 1, etag }] })).status, 200);
    const stored = await waitStored(api, init.body.file_id);
    assert.equal(stored.mime_type, 'text/plain');
    assert.equal(await (await fetch(stored.storage_url)).text(), 'hello');
  });

  test('complete-upload refuses a missing part, parts out of order and a wrong ETag, and stores nothing', async () => {
    const api = svc.client();
    const data = randomBytes(11 * MiB);
    const init = await api.post('/v1/files/init-upload', { filename: 'p.bin', size_bytes: data.length, part_size: 5 * MiB });
    const id = init.body.file_id;
    const etags = await putParts(init.body.upload_urls, data, 5 * MiB, [2]);
    const parts = etags.map((etag, i) => ({ part_number: i + 1, etag }));
    const missing = await api.post(`/v1/files/${id}/complete-upload`, { parts });
    assert.equal(missing.status, 422);
    assert.match(JSON.stringify(missing.body), /part 2/);
    const [, etag2] = await putParts(init.body.upload_urls.slice(0, 2), data, 5 * MiB, [1]);
    parts[1].etag = etag2;
    const disordered = await api.post(`/v1/files/${id}/complete-upload`, { parts: [parts[1], parts[0], parts[2]] });
    assert.equal(disordered.status, 422, JSON.stringify(disordered.body));
    const wrong = await api.post(`/v1/files/${id}/complete-upload`, {
      parts: [parts[0], { part_number: 2, etag: '"0123456789abcdef0123456789abcdef"' }, parts[2]],
    });
    assert.equal(wrong.status, 422);
    assert.match(JSON.stringify(wrong.body), /ETag/i);
    const still = await api.get(`/v1/files/${id}`);
    assert.equal(still.body.status, 'QUEUED');
    assert.equal((await fetch(still.body.storage_url)).status, 404);
    // With everything right it completes.
    assert.equal((await api.post(`/v1/files/${id}/complete-upload`, { parts })).status, 200);
    assert.equal((await waitStored(api, id)).status, 'STORED');
  });

  test('a tampered or expired part URL is refused with 403', async () => {
    const api = svc.client();
    const init = await api.post('/v1/files/init-upload', { filename: 't.bin', size_bytes: 10 });
    const url = new URL(init.body.upload_urls[0]);
    const sig = [...url.searchParams.keys()].find((k) => /signature/i.test(k))!;
    const value = url.searchParams.get(sig)!;
    url.searchParams.set(sig, (value[0] === 'a' ? 'b' : 'a') + value.slice(1));
    assert.equal((await fetch(url, { method: 'PUT', body: 'x'.repeat(10) })).status, 403);
    const other = new URL(init.body.upload_urls[0]);
    other.searchParams.set('partNumber', '2');
    assert.equal((await fetch(other, { method: 'PUT', body: 'x'.repeat(10) })).status, 403);
  });

  test('abort-upload discards the parts and fails the file; complete afterwards is refused', async () => {
    const api = svc.client();
    const init = await api.post('/v1/files/init-upload', { filename: 'a.bin', size_bytes: 10 });
    const [etag] = await putParts(init.body.upload_urls, Buffer.alloc(10, 1), 5 * MiB);
    const abort = await api.post(`/v1/files/${init.body.file_id}/abort-upload`, undefined);
    assert.equal(abort.status, 200);
    assert.deepEqual(abort.body, {});
    const f = await api.get(`/v1/files/${init.body.file_id}`);
    assert.equal(f.body.status, 'FAILED');
    assert.equal(f.body.error_status, 'UPLOAD_ABORTED');
    const late = await api.post(`/v1/files/${init.body.file_id}/complete-upload`, { parts: [{ part_number: 1, etag }] });
    assert.equal(late.status, 409);
    assert.equal((await fetch(init.body.upload_urls[0], { method: 'PUT', body: 'x' })).status >= 400, true);
  });

  test('uploads neither completed nor aborted are cleaned up after 7 days (injected clock)', async () => {
    const api = svc.client();
    const init = await api.post('/v1/files/init-upload', { filename: 'old.bin', size_bytes: 10 });
    await putParts(init.body.upload_urls, Buffer.alloc(10, 2), 5 * MiB);
    const { service } = svc;
    const { confinement, uids } = await testConfinement();
    const tasksAt = (days: number) =>
      new FileTasks({
        files: service.files,
        accounts: service.accounts,
        storage: service.storage,
        logger: createLogger('silent'),
        prober: new FileProber({ confinement, uids }),
        workDir: `${svc.dataDir}/work`,
        download: { maxBytes: 1e9, timeoutSeconds: 10, allow: [] },
        abandonedUploadSeconds: 7 * 86400,
        clock: () => new Date(Date.now() + days * 86400_000),
      });
    await tasksAt(6.9).pass();
    assert.equal((await api.get(`/v1/files/${init.body.file_id}`)).body.status, 'QUEUED');
    await tasksAt(7.1).pass();
    const f = await api.get(`/v1/files/${init.body.file_id}`);
    assert.equal(f.body.status, 'FAILED');
    assert.equal(f.body.error_status, 'UPLOAD_EXPIRED');
    const row = (await service.files.findById(init.body.file_id))!;
    const parts = await service.storage.listParts(row.storageKey, row.uploadId!).catch(() => []);
    assert.deepEqual(parts, []);
  });

  test('uploads that received no part for FFOP_IDLE_UPLOAD_SECONDS are cleaned up sooner; active ones stay (injected clock)', async () => {
    const api = svc.client();
    const idle = await api.post('/v1/files/init-upload', { filename: 'idle.bin', size_bytes: 10 });
    const active = await api.post('/v1/files/init-upload', { filename: 'active.bin', size_bytes: 10 });
    await putParts(idle.body.upload_urls, Buffer.alloc(10, 2), 5 * MiB);
    await putParts(active.body.upload_urls, Buffer.alloc(10, 3), 5 * MiB);
    const { service } = svc;
    const { confinement, uids } = await testConfinement();
    const tasksAt = (hours: number) =>
      new FileTasks({
        files: service.files,
        accounts: service.accounts,
        storage: service.storage,
        logger: createLogger('silent'),
        prober: new FileProber({ confinement, uids }),
        workDir: `${svc.dataDir}/work`,
        download: { maxBytes: 1e9, timeoutSeconds: 10, allow: [] },
        abandonedUploadSeconds: 7 * 86400,
        idleUploadSeconds: 86400,
        clock: () => new Date(Date.now() + hours * 3600_000),
      });
    // The active upload's part arrives 20 hours in (its data file written then).
    const activeRow = (await service.files.findById(active.body.file_id))!;
    const partTime = new Date(Date.now() + 20 * 3600_000);
    await utimes(join(svc.dataDir, 'storage', 'uploads', activeRow.uploadId!, 'data'), partTime, partTime);
    await tasksAt(23).pass();
    assert.equal((await api.get(`/v1/files/${idle.body.file_id}`)).body.status, 'QUEUED');
    await tasksAt(25).pass();
    const expired = await api.get(`/v1/files/${idle.body.file_id}`);
    assert.equal(expired.body.status, 'FAILED');
    assert.equal(expired.body.error_status, 'UPLOAD_EXPIRED');
    assert.match(expired.body.external_error_message, /received no part for 1 day; its parts were discarded/);
    const row = (await service.files.findById(idle.body.file_id))!;
    assert.deepEqual(await service.storage.listParts(row.storageKey, row.uploadId!).catch(() => []), []);
    assert.equal((await api.get(`/v1/files/${active.body.file_id}`)).body.status, 'QUEUED', 'a part 20 h in keeps it until 44 h');
    await tasksAt(45).pass();
    assert.equal((await api.get(`/v1/files/${active.body.file_id}`)).body.error_status, 'UPLOAD_EXPIRED');
  });

  test('quotas: an upload larger than the storage quota is a 403 naming it', async () => {
    const free = svc.client(await svc.newAccount('free'));
    const res = await free.post('/v1/files/init-upload', { filename: 'huge.bin', size_bytes: 6_000_000_000 });
    assert.equal(res.status, 403);
    assert.match(res.body.detail, /storage quota/);
  });

  test("rate limit: past the plan's requests per minute a key gets 429 with Retry-After", async () => {
    const api = svc.client(await svc.newAccount('free')).withoutRetries(); // 120 per minute; the 429 is what is tested
    let limited: Awaited<ReturnType<ApiClient['get']>> | null = null;
    // 120 tokens refilled at 2 per second: a slow machine needs more than 121 requests to run out.
    for (let i = 0; i < 600 && !limited; i++) {
      const r = await api.get('/v1/files?limit=1');
      if (r.status === 429) limited = r;
    }
    assert.ok(limited, 'never limited');
    assert.match(limited.body.detail, /Rate limit/);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  });
});

test('open uploads do not starve store-file: work is found behind 110 of them', async () => {
  const svc = await startService({ allow: [] });
  try {
    const api = svc.client();
    for (let i = 0; i < 110; i++) {
      const r = await api.post('/v1/files/init-upload', { filename: `open${i}.bin`, size_bytes: 1 });
      assert.equal(r.status, 200);
    }
    const res = await api.post('/v1/files/store-file', { file_url: 'http://10.255.255.1/x.mp4' }); // refused at once: FAILED
    for (let i = 0; i < 200; i++) {
      const f = await api.get(`/v1/files/${res.body.file_id}`);
      if (f.body.status === 'FAILED') {
        assert.equal(f.body.error_status, 'FORBIDDEN_INPUT_ADDRESS');
        return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail('store-file never processed');
  } finally {
    await svc.close();
  }
});
