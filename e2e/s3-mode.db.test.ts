// The service with S3 storage (a real S3 server that checks signatures): outputs, public and private
// URLs, direct uploads to presigned S3 part URLs, stored files as inputs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { adminClient, startS3Server, type S3Server } from '../core/storage/testing/s3-test-server.ts';
import { makeClip, probeJson, startMediaServer, startService, type MediaServer, type ServiceFixture } from './harness.ts';

describe('embedded mode with S3 storage', () => {
  let s3: S3Server;
  let media: MediaServer;
  let svc: ServiceFixture;
  const bucket = `ffop-e2e-${randomUUID().slice(0, 8)}`;

  before(async () => {
    s3 = await startS3Server();
    await adminClient(s3.settings).makeBucket(bucket, s3.settings.region);
    media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4'));
    svc = await startService({
      allow: [media.allowEntry],
      env: {
        FFOP_STORAGE: 's3',
        FFOP_S3_ENDPOINT: s3.settings.endpoint,
        FFOP_S3_REGION: s3.settings.region,
        FFOP_S3_BUCKET: bucket,
        FFOP_S3_ACCESS_KEY: s3.settings.accessKey,
        FFOP_S3_SECRET_KEY: s3.settings.secretKey,
      },
    });
  });
  after(async () => {
    await svc?.close();
    await media?.close();
    await s3?.stop();
  });

  test('outputs land in S3; public ones are served by the service, private ones by presigned S3 URLs', async () => {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command: '-i {{in_1}} -vf scale=160:-2 -c:v libx264 -preset ultrafast {{out_1}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_1: 'small.mp4' },
    });
    const { record } = await api.waitForEnd(id);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    const out = record.output_files.out_1;
    assert.ok(out.storage_url.startsWith(svc.url + '/storage/public/'));
    const ranged = await fetch(out.storage_url, { headers: { range: 'bytes=0-99' } });
    assert.equal(ranged.status, 206);
    assert.equal((await ranged.arrayBuffer()).byteLength, 100);
    assert.equal((await probeJson(out.storage_url)).streams[0].width, 160);

    // The output feeds the next command straight from S3.
    const next = await api.submit({
      ffmpeg_command: '-i {{in_1}} -frames:v 1 {{out_1}}',
      input_files: { in_1: out.storage_url },
      output_files: { out_1: 'f.png' },
      is_private: true,
    });
    const second = (await api.waitForEnd(next)).record;
    assert.equal(second.status, 'SUCCESS', JSON.stringify(second));
    const plain = second.output_files.out_1.storage_url;
    assert.equal((await fetch(plain)).status, 403);
    const signed = (await api.get(`/v1/commands/${next}?presigned_ttl_seconds=60`)).body.output_files.out_1.storage_url;
    assert.ok(signed.startsWith(s3.settings.endpoint), signed);
    const png = await fetch(signed);
    assert.equal(png.status, 200);
    assert.equal((await probeJson(signed)).streams[0].codec_name, 'png');
  });

  test('a 12 MB upload in three parts straight to S3, completed, probed and read back equal', async () => {
    const api = svc.client();
    const data = randomBytes(12 * 1024 * 1024);
    const init = await api.post('/v1/files/init-upload', { filename: 'big.bin', size_bytes: data.length, part_size: 5 * 1024 * 1024 });
    assert.equal(init.body.upload_urls.length, 3);
    assert.ok(init.body.upload_urls[0].startsWith(s3.settings.endpoint));
    const parts = [];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(init.body.upload_urls[i], {
        method: 'PUT',
        body: new Uint8Array(data.subarray(i * 5 * 1024 * 1024, (i + 1) * 5 * 1024 * 1024)),
      });
      assert.equal(res.status, 200, await res.text());
      parts.push({ part_number: i + 1, etag: res.headers.get('etag')! });
    }
    const tampered = new URL(init.body.upload_urls[0]);
    tampered.searchParams.set('X-Amz-Signature', '0'.repeat(64));
    assert.equal((await fetch(tampered, { method: 'PUT', body: 'x' })).status, 403);
    const done = await api.post(`/v1/files/${init.body.file_id}/complete-upload`, { parts });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    for (let i = 0; i < 200; i++) {
      const f = await api.get(`/v1/files/${init.body.file_id}`);
      if (f.body.status === 'STORED') {
        const back = Buffer.from(await (await fetch(f.body.storage_url)).arrayBuffer());
        assert.ok(back.equals(data));
        return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail('upload never STORED');
  });
  test('an output past 64 MiB goes up in parts (its S3 ETag says so) and arrives whole; nothing is left unfinished', async () => {
    const api = svc.client();
    // 300 frames of 320x240 RGB: 69 MB of raw video, the same bytes wherever ffmpeg writes them.
    const raw = '-f lavfi -i color=c=red:s=320x240:r=25:d=12 -c:v rawvideo -pix_fmt rgb24 -fflags +bitexact -f avi';
    const id = await api.submit({ ffmpeg_command: `${raw} {{out_1}}`, output_files: { out_1: 'raw.avi' }, max_command_run_seconds: 120 });
    const { record } = await api.waitForEnd(id, 120_000);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    const key = decodeURIComponent(new URL(record.output_files.out_1.storage_url).pathname.replace(/^\/storage\//, ''));
    const admin = adminClient(s3.settings);
    const stat = await admin.statObject(bucket, key);
    assert.match(stat.etag, /-5$/, 'a multipart object of five 16 MiB parts');

    const dir = await mkdtemp(join(tmpdir(), 's3-large-output-'));
    try {
      await promisify(execFile)('ffmpeg', ['-v', 'error', ...raw.split(' '), join(dir, 'raw.avi')]);
      const expected = await readFile(join(dir, 'raw.avi'));
      assert.equal(stat.size, expected.length);
      const hash = createHash('sha256');
      for await (const chunk of await admin.getObject(bucket, key)) hash.update(chunk as Buffer);
      assert.equal(hash.digest('hex'), createHash('sha256').update(expected).digest('hex'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const unfinished: unknown[] = [];
    for await (const upload of admin.listIncompleteUploads(bucket, key, true)) unfinished.push(upload);
    assert.deepEqual(unfinished, []);
  });
});
