// The storage contract against S3Storage on a real S3 server that checks signatures (versitygw).
// Uses FFOP_TEST_S3_ENDPOINT (+ _REGION, _ACCESS_KEY, _SECRET_KEY) when set; otherwise starts
// versitygw through scripts/versitygw.sh (building it once) and stops it at the end if it started it.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Client } from 'minio';
import { storageContract } from './testing/storage-contract.ts';
import { S3Storage } from './s3-storage.ts';
import { adminClient, startS3Server, type S3Server, type S3Settings } from './testing/s3-test-server.ts';

/**
 * Empties and removes a test bucket, unfinished uploads included. Objects go through
 * S3Storage.deletePrefix: minio's own listing mangles keys with '+' on versitygw.
 */
async function removeBucket(client: Client, storage: S3Storage, bucket: string): Promise<void> {
  for (const prefix of ['contract/', 'public/']) await storage.deletePrefix(prefix);
  const uploads: { key: string; uploadId: string }[] = [];
  for await (const upload of client.listIncompleteUploads(bucket, '', true)) uploads.push(upload);
  for (const upload of uploads) await client.abortMultipartUpload(bucket, upload.key, upload.uploadId);
  await client.removeBucket(bucket);
}

let server: S3Server | undefined;
async function s3(): Promise<S3Settings> {
  server ??= await startS3Server();
  return server.settings;
}
after(async () => {
  await server?.stop();
});

storageContract(
  'S3 (versitygw)',
  async ({ clock }) => {
    const settings = await s3();
    const admin = adminClient(settings);
    const bucket = `ffop-test-${randomUUID().slice(0, 8)}`;
    await admin.makeBucket(bucket, settings.region);
    const storage = new S3Storage({ ...settings, bucket, clock });
    return { storage, baseUrl: settings.endpoint, close: () => removeBucket(admin, storage, bucket) };
  },
  // A private bucket serves nothing unsigned; public/ files need a CDN or bucket policy in front.
  { servesPublicUrls: false },
);

describe('S3 storage: configuration', () => {
  let settings: S3Settings;
  before(async () => {
    settings = await s3();
  });

  test('publicUrl is endpoint/bucket/key by default, or under publicBaseUrl', () => {
    const plain = new S3Storage({ ...settings, endpoint: 'http://s3.test:9000', bucket: 'media' });
    assert.equal(plain.publicUrl('public/a b/c#d.mp4'), 'http://s3.test:9000/media/public/a%20b/c%23d.mp4');
    const cdn = new S3Storage({ ...settings, bucket: 'media', publicBaseUrl: 'https://cdn.test/files/' });
    assert.equal(cdn.publicUrl('public/x.png'), 'https://cdn.test/files/public/x.png');
    assert.throws(() => plain.publicUrl('a/../b'));
  });

  test('the endpoint must be a plain http(s) origin, and put parts at least 5 MiB', () => {
    for (const endpoint of ['ftp://s3.test', 'http://s3.test/prefix', 'http://user:pw@s3.test', 'not a url']) {
      assert.throws(() => new S3Storage({ ...settings, endpoint, bucket: 'b' }), endpoint);
    }
    assert.throws(() => new S3Storage({ ...settings, bucket: 'b', partBytes: 1024 * 1024 }));
  });

  test('wrong credentials fail loudly rather than look like a missing object', async () => {
    const bucket = `ffop-test-${randomUUID().slice(0, 8)}`;
    await adminClient(settings).makeBucket(bucket, settings.region);
    try {
      const wrong = new S3Storage({ ...settings, bucket, secretKey: `${settings.secretKey}x` });
      await assert.rejects(wrong.stat('any/key.bin'));
    } finally {
      await removeBucket(adminClient(settings), new S3Storage({ ...settings, bucket }), bucket);
    }
  });
});

describe('S3 storage: part URLs sign their Content-Length', () => {
  test('attack: dropping content-length from the signed headers, or sending another size, is refused', async () => {
    const settings = await s3();
    const admin = adminClient(settings);
    const bucket = `ffop-test-${randomUUID().slice(0, 8)}`;
    await admin.makeBucket(bucket, settings.region);
    const storage = new S3Storage({ ...settings, bucket });
    try {
      const key = 'contract/bound.bin';
      const uploadId = await storage.createMultipartUpload(key, 'application/octet-stream', 100);
      const url = new URL(await storage.presignUploadPart(key, uploadId, 1, 600, 100));
      assert.equal(url.searchParams.get('X-Amz-SignedHeaders'), 'content-length;host');
      const unbound = new URL(url);
      unbound.searchParams.set('X-Amz-SignedHeaders', 'host');
      for (const [what, target, size] of [
        ['unbound', unbound, 5000],
        ['larger', url, 5000],
      ] as const) {
        const res = await fetch(target, { method: 'PUT', body: Buffer.alloc(size, 1) });
        assert.equal(res.status, 403, `${what}: ${await res.text()}`);
      }
      assert.deepEqual(await storage.listParts(key, uploadId), []);
      await storage.abortMultipartUpload(key, uploadId);
    } finally {
      await removeBucket(admin, storage, bucket);
    }
  });
});
