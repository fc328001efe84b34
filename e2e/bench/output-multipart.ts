// Benchmark: a large output stored to S3 (versitygw) the two ways a cluster runner can, interleaved:
//   (a) one presigned PUT of the whole file (runner-image/put-file.ts), what every output did before;
//   (b) a multipart upload as a runner pod does it for an output past MULTIPART_OUTPUT_MIN_BYTES: the
//       plan (upload created, part URLs presigned: core/engine/output-uploads.ts), the parts PUT from
//       the file by range OUTPUT_PART_CONCURRENCY at a time (runner-image/put-parts.ts), and the
//       completion from the parts' ETags, as the reconciler does it.
// versitygw runs on this machine, so the figures say what the service's side costs and what parallel
// parts gain against one connection's pace; on a pod's real network the gap is the network's.
// Every stored object is checked (size and MD5). Medians of `runs` interleaved runs.
// Run: npx tsx e2e/bench/output-multipart.ts [sizeMiB=256] [runs=5]
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planOutputUpload } from '../../core/engine/output-uploads.ts';
import { OUTPUT_PART_CONCURRENCY, OUTPUT_PART_MIN_BYTES, outputPartBytes } from '../../core/jobs/output-parts.ts';
import { S3Storage } from '../../core/storage/s3-storage.ts';
import { adminClient, startS3Server } from '../../core/storage/testing/s3-test-server.ts';
import { putFile } from '../../runner-image/put-file.ts';
import { putParts } from '../../runner-image/put-parts.ts';
import { median, reportRow } from './stats.ts';

const MiB = 1024 * 1024;
const [sizeMiB = 256, runs = 5] = process.argv.slice(2).map(Number);
const size = sizeMiB * MiB;
const signal = new AbortController().signal;

const dir = await mkdtemp(join(tmpdir(), 'ffop-output-multipart-'));
const s3 = await startS3Server();
const bucket = `ffop-bench-${randomUUID().slice(0, 8)}`;
const admin = adminClient(s3.settings);
await admin.makeBucket(bucket, s3.settings.region);
const storage = new S3Storage({ ...s3.settings, bucket });
try {
  const source = join(dir, 'output.mp4');
  const md5 = await writeRandomFile(source, size);
  const partBytes = outputPartBytes(size);
  console.log(
    `${sizeMiB} MiB output; multipart: ${Math.ceil(size / partBytes)} parts of ${partBytes / MiB} MiB, ${OUTPUT_PART_CONCURRENCY} at a time; ${runs} interleaved runs`,
  );

  const whole = async (key: string) => {
    await putFile(await storage.presignPut(key, 3600), source, { size, contentType: 'video/mp4', signal });
  };
  const inParts = async (key: string) => {
    const plan = await planOutputUpload(storage, key, {
      size,
      contentType: 'video/mp4',
      minPartBytes: OUTPUT_PART_MIN_BYTES,
      ttlSeconds: 3600,
    });
    const upload = await putParts(plan, source, size, { signal });
    await storage.completeMultipartUpload(key, upload.uploadId, upload.parts);
  };
  const cases: [string, (key: string) => Promise<void>][] = [
    ['one PUT', whole],
    ['multipart, parallel parts', inParts],
  ];
  const seconds = new Map<string, number[]>(cases.map(([name]) => [name, []]));
  for (let i = 0; i < runs; i++) {
    for (const [name, upload] of i % 2 === 0 ? cases : [...cases].reverse()) {
      const key = `bench/${randomUUID()}/output.mp4`;
      const start = performance.now();
      await upload(key);
      seconds.get(name)!.push((performance.now() - start) / 1000);
      await check(key, md5);
      await storage.delete(key);
    }
  }
  for (const [name, values] of seconds) {
    const m = median(values);
    console.log(
      `${name.padEnd(28)} median ${m.toFixed(2)} s (${(size / MiB / m).toFixed(0)} MiB/s); runs: ${values.map((v) => v.toFixed(2)).join(' ')}`,
    );
  }
  const put = median(seconds.get('one PUT')!);
  const parts = median(seconds.get('multipart, parallel parts')!);
  reportRow({
    what: `${sizeMiB} MiB output to S3 (versitygw): multipart, ${OUTPUT_PART_CONCURRENCY} parts at a time, vs one PUT`,
    service: `${parts.toFixed(2)} s`,
    baseline: `${put.toFixed(2)} s`,
    ratio: `${(parts / put).toFixed(2)}x`,
    goal: '<= 1.0x (on one machine; a pod gains its network)',
  });
} finally {
  await storage.deletePrefix('bench/');
  await admin.removeBucket(bucket);
  await s3.stop();
  await rm(dir, { recursive: true, force: true });
}

async function check(key: string, md5: string): Promise<void> {
  const hash = createHash('md5');
  let stored = 0;
  for await (const chunk of await storage.read(key)) {
    hash.update(chunk as Buffer);
    stored += (chunk as Buffer).length;
  }
  if (stored !== size || hash.digest('hex') !== md5) throw new Error(`${key}: stored ${stored} bytes, not the ${size} sent`);
}

async function writeRandomFile(path: string, bytes: number): Promise<string> {
  const file = await open(path, 'w');
  const hash = createHash('md5');
  try {
    for (let written = 0; written < bytes;) {
      const chunk = randomBytes(Math.min(8 * MiB, bytes - written));
      hash.update(chunk);
      await file.write(chunk);
      written += chunk.length;
    }
  } finally {
    await file.close();
  }
  return hash.digest('hex');
}
