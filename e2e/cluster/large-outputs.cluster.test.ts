// Cluster mode: an output past the multipart threshold goes up from the runner pod in parts, in
// parallel, through the plan the API gives it, and the operator completes the upload from the result.
// The threshold and the part size are lowered (5 MiB) so that a 11.5 MiB output is three parts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startClusterService, type ClusterService } from './service-fixture.ts';

const MiB = 1024 * 1024;
// 50 frames of 320x240 RGB: 11.5 MB of raw video in an AVI, the same bytes wherever ffmpeg writes them.
const RAW_VIDEO = '-f lavfi -i color=c=red:s=320x240:r=25:d=2 -c:v rawvideo -pix_fmt rgb24 -fflags +bitexact -f avi';

describe('cluster mode: large outputs', () => {
  let svc: ClusterService;
  const completed: { key: string; parts: number }[] = [];

  before(async () => {
    svc = await startClusterService({ outputMultipart: { minBytes: 5 * MiB, minPartBytes: 5 * MiB } });
    // The operator runs in this process on the same storage: see which uploads it completes.
    const complete = svc.storage.completeMultipartUpload.bind(svc.storage);
    svc.storage.completeMultipartUpload = async (key, uploadId, parts) => {
      const stored = await complete(key, uploadId, parts);
      completed.push({ key, parts: parts.length });
      return stored;
    };
  });
  after(async () => {
    await svc?.close();
  });

  test('an output past the threshold arrives whole, uploaded in parts; a small one in the same command is one PUT', async () => {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command: `${RAW_VIDEO} {{out_1}} -f lavfi -i color=c=blue:s=32x32:d=1 -frames:v 1 {{out_2}}`,
      output_files: { out_1: 'raw.avi', out_2: 'small.png' },
      vcpu_count: 1,
      max_command_run_seconds: 120,
    });
    const { record } = await api.waitForEnd(id, 120_000);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));

    const dir = await mkdtemp(join(tmpdir(), 'large-outputs-'));
    try {
      await promisify(execFile)('ffmpeg', ['-v', 'error', ...RAW_VIDEO.split(' '), join(dir, 'raw.avi')]);
      const expected = await readFile(join(dir, 'raw.avi'));
      assert.ok(expected.length > 10 * MiB, `${expected.length} bytes`);
      const stored = Buffer.from(await (await fetch(record.output_files.out_1.storage_url)).arrayBuffer());
      assert.equal(stored.length, expected.length);
      assert.equal(createHash('sha256').update(stored).digest('hex'), createHash('sha256').update(expected).digest('hex'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    assert.deepEqual(
      completed.map((c) => ({ name: c.key.split('/').pop(), parts: c.parts })),
      [{ name: 'raw.avi', parts: 3 }],
    );
    assert.equal((await fetch(record.output_files.out_2.storage_url)).status, 200);
  });
});
