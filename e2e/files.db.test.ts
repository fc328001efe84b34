// The file endpoints end to end: store-file, list, read, delete, bulk delete, private files.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeClip, probeJson, startMediaServer, startService, waitForFile, type MediaServer, type ServiceFixture } from './harness.ts';

/** Polls `check` every 50 ms until it holds; fails after `timeoutMs`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !(await check()); await new Promise((r) => setTimeout(r, 50))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  }
}

describe('files', () => {
  let media: MediaServer;
  let svc: ServiceFixture;

  before(async () => {
    media = await startMediaServer(async (dir) => {
      await makeClip(dir, 'clip.mp4');
      await writeFile(join(dir, 'notes.txt'), 'not media\n');
    });
    svc = await startService({ allow: [media.allowEntry] });
  });
  after(async () => {
    await svc?.close();
    await media?.close();
  });

  test('store-file: {file_id} at once, then STORED with media metadata; usable as a command input', async () => {
    const api = svc.client(await svc.newAccount('pro'));
    const res = await api.post('/v1/files/store-file', { file_url: `${media.url}/clip.mp4` });
    assert.equal(res.status, 200);
    const file = await waitForFile(api, res.body.file_id);
    assert.equal(file.status, 'STORED', JSON.stringify(file));
    assert.equal(file.service_store_type, 'STORED_FILE');
    assert.equal(file.original_file_url, `${media.url}/clip.mp4`);
    assert.equal(file.file_type, 'video');
    assert.equal(file.codec, 'h264');
    assert.equal(file.width, 320);
    assert.match(file.video_profile_level, /@/);
    assert.equal(file.file_count, 1);
    assert.ok(file.size_mbytes > 0);
    assert.ok(file.storage_url.endsWith('/clip.mp4'));
    assert.equal((await probeJson(file.storage_url)).streams.length, 2);

    // Its storage URL feeds a command without going through the SSRF guard's exceptions.
    const requestsBefore = media.requests.length;
    const id = await api.submit({
      ffmpeg_command: '-i {{in_1}} -t 0.5 -an {{out_1}}',
      input_files: { in_1: file.storage_url },
      output_files: { out_1: 'cut.mp4' },
    });
    const { record } = await api.waitForEnd(id);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    assert.equal(media.requests.length, requestsBefore);
  });

  test('store-file failures carry error_status and external_error_message; non-media files are stored as other', async () => {
    const api = svc.client(await svc.newAccount('pro'));
    const missing = await waitForFile(
      api,
      (await api.post('/v1/files/store-file', { file_url: `${media.url}/missing/x.mp4` })).body.file_id,
    );
    assert.equal(missing.status, 'FAILED');
    assert.equal(missing.error_status, 'UNREACHABLE_INPUT_FILE');
    assert.match(missing.external_error_message, /404/);
    const forbidden = await waitForFile(api, (await api.post('/v1/files/store-file', { file_url: 'http://10.0.0.1/x.mp4' })).body.file_id);
    assert.equal(forbidden.error_status, 'FORBIDDEN_INPUT_ADDRESS');
    const text = await waitForFile(api, (await api.post('/v1/files/store-file', { file_url: `${media.url}/notes.txt` })).body.file_id);
    assert.equal(text.status, 'STORED');
    assert.equal(text.file_type, 'other');
    assert.equal(text.mime_type, 'text/plain');
    // As for command inputs, the file name must end the URL; nothing is fetched when it does not.
    const requestsBefore = media.requests.length;
    for (const url of [`${media.url}/`, `${media.url}/media/`, `${media.url}/download?file=x.mp4`]) {
      const nameless = await waitForFile(api, (await api.post('/v1/files/store-file', { file_url: url })).body.file_id);
      assert.equal(nameless.status, 'FAILED', url);
      assert.equal(nameless.error_status, 'INVALID_INPUT_FILE_NAME', url);
      assert.match(nameless.external_error_message, /does not end in a file name/);
    }
    assert.equal(media.requests.length, requestsBefore);
  });

  test('list: outputs and stored files, newest first, no deleted files; delete and bulk delete', async () => {
    const api = svc.client(await svc.newAccount('pro'));
    const stored = await waitForFile(api, (await api.post('/v1/files/store-file', { file_url: `${media.url}/clip.mp4` })).body.file_id);
    const cmd = await api.submit({
      ffmpeg_command: '-f lavfi -i color=s=32x32:d=0.1 -frames:v 1 {{out_1}}',
      output_files: { out_1: 'a.png' },
    });
    const out = (await api.waitForEnd(cmd)).record.output_files.out_1;
    const list = await api.get('/v1/files?limit=10');
    assert.deepEqual(
      list.body.map((f: any) => f.file_id),
      [out.file_id, stored.file_id],
    );
    assert.equal(list.body[0].service_store_type, 'OUTPUT');

    const del = await api.request('DELETE', `/v1/files/${stored.file_id}`);
    assert.equal(del.status, 200);
    assert.equal(del.body.is_deleted, true);
    assert.equal((await fetch(stored.storage_url)).status, 404, 'the bytes are gone');
    const after = await api.get(`/v1/files/${stored.file_id}`);
    assert.equal(after.body.is_deleted, true);
    assert.equal(after.body.width, 320, 'metadata stays readable');
    assert.deepEqual(
      (await api.get('/v1/files')).body.map((f: any) => f.file_id),
      [out.file_id],
    );

    const other = svc.client(await svc.newAccount('pro'));
    const foreign = await other.post('/v1/files/bulk-delete', { file_ids: [out.file_id] });
    assert.deepEqual(foreign.body, { deleted_file_ids: [] });
    assert.equal((await other.request('DELETE', `/v1/files/${out.file_id}`)).status, 404);
    assert.equal((await other.get(`/v1/files/${out.file_id}`)).status, 404);

    const unknown = '00000000-0000-4000-8000-000000000000';
    const bulk = await api.post('/v1/files/bulk-delete', { file_ids: [out.file_id, stored.file_id, unknown] });
    assert.deepEqual(bulk.body, { deleted_file_ids: [out.file_id] });
    assert.equal((await api.get(`/v1/commands/${cmd}`)).body.output_files.out_1.is_deleted, true);
    assert.equal((await api.post('/v1/files/bulk-delete', { file_ids: [out.file_id] })).body.deleted_file_ids.length, 0);
  });

  test('private files: the plain URL does not serve them; presigned URLs work for their TTL', async () => {
    const api = svc.client(await svc.newAccount('pro'));
    const id = await api.submit({
      ffmpeg_command: '-f lavfi -i color=s=32x32:d=0.1 -frames:v 1 {{out_1}}',
      output_files: { out_1: 'p.png' },
      is_private: true,
    });
    const { record } = await api.waitForEnd(id);
    const plain = record.output_files.out_1.storage_url;
    assert.equal(record.output_files.out_1.is_private, true);
    assert.equal((await fetch(plain)).status, 403);
    const signed = (await api.get(`/v1/commands/${id}?presigned_ttl_seconds=2`)).body.output_files.out_1.storage_url;
    assert.notEqual(signed, plain);
    assert.equal((await fetch(signed)).status, 200);
    const fileUrl = (await api.get(`/v1/files/${record.output_files.out_1.file_id}?presigned_ttl_seconds=60`)).body.storage_url;
    assert.equal((await fetch(fileUrl)).status, 200);
    await new Promise((r) => setTimeout(r, 3100));
    assert.equal((await fetch(signed)).status, 403, 'expired');

    const free = svc.client(await svc.newAccount('free'));
    const refused = await free.post('/v1/files/store-file', { file_url: `${media.url}/clip.mp4`, is_private: true });
    assert.equal(refused.status, 403);
    assert.match(refused.body.detail, /private/);
    const refusedUpload = await free.post('/v1/files/init-upload', { filename: 'a.mp4', size_bytes: 10, is_private: true });
    assert.equal(refusedUpload.status, 403);
  });

  test('file endpoint validation', async () => {
    const api = svc.client();
    const cases: [string, string, unknown, (string | number)[]][] = [
      ['POST', '/v1/files/bulk-delete', { file_ids: [] }, ['body', 'file_ids']],
      ['POST', '/v1/files/bulk-delete', { file_ids: Array(1001).fill('00000000-0000-4000-8000-000000000000') }, ['body', 'file_ids']],
      ['POST', '/v1/files/bulk-delete', { file_ids: ['nope'] }, ['body', 'file_ids', 0]],
      ['POST', '/v1/files/init-upload', { filename: 'a b.mp4', size_bytes: 1 }, ['body', 'filename']],
      ['POST', '/v1/files/init-upload', { filename: 'x'.repeat(256), size_bytes: 1 }, ['body', 'filename']],
      ['POST', '/v1/files/init-upload', { filename: 'a.mp4', size_bytes: 5497558138881 }, ['body', 'size_bytes']],
      ['POST', '/v1/files/init-upload', { filename: 'a.mp4', size_bytes: 1, part_size: 0 }, ['body', 'part_size']],
      ['POST', '/v1/files/store-file', { file_url: 'ftp://x/y.mp4' }, ['body', 'file_url']],
      ['GET', '/v1/files?limit=0', undefined, ['query', 'limit']],
      ['GET', '/v1/files/abc', undefined, ['path', 'file_id']],
      ['GET', '/v1/files/00000000-0000-4000-8000-000000000000?presigned_ttl_seconds=700000', undefined, ['query', 'presigned_ttl_seconds']],
    ];
    for (const [method, path, body, loc] of cases) {
      const res = await api.request(method, path, body);
      assert.equal(res.status, 422, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      assert.ok(
        res.body.detail.some((d: any) => JSON.stringify(d.loc) === JSON.stringify(loc)),
        `${path}: ${JSON.stringify(res.body.detail)}`,
      );
    }
  });
});

test('a file deleted while it downloads stays deleted: no bytes, no STORED', async () => {
  const media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4'));
  const svc = await startService({ allow: [media.allowEntry] });
  try {
    const api = svc.client();
    const id = (await api.post('/v1/files/store-file', { file_url: `${media.url}/slow/clip.mp4` })).body.file_id;
    await until('the download to start', async () => (await api.get(`/v1/files/${id}`)).body.status === 'DOWNLOADING');
    assert.equal((await api.request('DELETE', `/v1/files/${id}`)).status, 200);
    // The download finishes (the row says DOWNLOADED) and its task ends (its temporary folder is gone).
    await until(
      'the download task to end',
      async () =>
        (await api.get(`/v1/files/${id}`)).body.status === 'DOWNLOADED' &&
        !(await readdir(join(svc.dataDir, 'work'))).some((name) => name.startsWith('file-')),
    );
    const f = (await api.get(`/v1/files/${id}`)).body;
    assert.equal(f.is_deleted, true);
    assert.notEqual(f.status, 'STORED');
    assert.equal((await fetch(f.storage_url)).status, 404);
    // A fractional presigned TTL is rounded up, not a 500.
    assert.equal((await api.get(`/v1/files/${id}?presigned_ttl_seconds=1.5`)).status, 200);
  } finally {
    await svc.close();
    await media.close();
  }
});
