// Benchmark: what a client sees when the disk is full. Embedded service with its storage and work
// folders on a 64 MiB tmpfs (needs root); one file stored first, then the disk filled to a few
// free MiB for each case: an upload part, a command whose download, ffmpeg write or output storing
// meets the full disk. Prints each outcome (status codes, error statuses, time to answer), then
// checks the file stored first, and that everything works again once space is freed.
// Run: npx tsx e2e/bench/disk-full.ts
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { makeClip, startMediaServer, startService, waitForFile } from '../harness.ts';

const MiB = 1024 * 1024;
const mount = await mkdtemp(join(tmpdir(), 'ffop-disk-full-'));
execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', mount]);
const filler = join(mount, 'filler');
const media = await startMediaServer(async (dir) => {
  await makeClip(dir, 'clip.mp4', 2);
  await writeFile(join(dir, 'big.bin'), randomBytes(16 * MiB));
});
const svc = await startService({
  allow: [media.allowEntry],
  // A reserve of 1 MiB (the default, 128 MiB, is more than this whole filesystem); ignored before.
  env: { FFOP_STORAGE_DIR: join(mount, 'storage'), FFOP_WORK_DIR: join(mount, 'work'), FFOP_DISK_RESERVE_BYTES: String(MiB) },
});
const api = svc.client();

/** Leaves about `free` bytes free on the tmpfs. */
async function fillTo(free: number): Promise<void> {
  await rm(filler, { force: true });
  const s = await statfs(mount);
  const size = Math.max(0, s.bavail * s.bsize - free);
  await writeFile(filler, Buffer.alloc(size));
}

async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t = performance.now();
  const r = await f();
  return [r, Math.round(performance.now() - t)];
}

async function uploadPart(label: string): Promise<void> {
  const init = await api.post('/v1/files/init-upload', { filename: 'part.bin', size_bytes: 10 * MiB, part_size: 5 * MiB });
  if (init.status !== 200) return void console.log(`${label}: init-upload ${init.status} ${JSON.stringify(init.body)}`);
  const [res, ms] = await timed(() => fetch(init.body.upload_urls[0], { method: 'PUT', body: new Uint8Array(randomBytes(5 * MiB)) }));
  const text = await res.text();
  console.log(`${label}: part PUT ${res.status} in ${ms} ms ${text.slice(0, 200)}`);
  await api.post(`/v1/files/${init.body.file_id}/abort-upload`, {});
}

async function command(label: string, body: unknown): Promise<void> {
  const [{ record, seen }, ms] = await timed(async () => api.waitForEnd(await api.submit(body), 120_000));
  const message = record.error_message ? ` ${JSON.stringify(String(record.error_message).slice(0, 160))}` : '';
  console.log(`${label}: ${seen.join(' > ')} ${record.error_status ?? ''} in ${ms} ms${message}`);
}

// A raw video output of 8 frames of 1024x1024 rgb24: 24 MiB.
const bigOutput = {
  ffmpeg_command: '-f lavfi -i color=s=1024x1024 -frames:v 8 -c:v rawvideo -pix_fmt rgb24 -f nut {{out_1}}',
  output_files: { out_1: 'big.nut' },
};
const download = {
  input_files: { in_1: `${media.url}/big.bin` },
  ffmpeg_command: '-f rawvideo -s 512x512 -pix_fmt rgb24 -i {{in_1}} -frames:v 1 {{out_1}}',
  output_files: { out_1: 'a.png' },
};

try {
  const stored = await api.post('/v1/files/store-file', { file_url: `${media.url}/clip.mp4` });
  const before = await waitForFile(api, stored.body.file_id);
  const original = Buffer.from(await (await fetch(before.storage_url)).arrayBuffer());
  console.log(`stored first: ${before.status}, ${original.length} bytes`);

  await fillTo(2 * MiB);
  await uploadPart('upload part, 2 MiB free');
  await fillTo(512 * 1024);
  await command('command, input download, 0.5 MiB free', download);
  await fillTo(4 * MiB);
  await command('command, ffmpeg writes 24 MiB, 4 MiB free', bigOutput);
  await fillTo(36 * MiB);
  await command('command, 24 MiB output stored, 36 MiB free', bigOutput);

  const again = await fetch(before.storage_url);
  const bytes = Buffer.from(await again.arrayBuffer());
  console.log(`stored first, read back: ${again.status}, ${bytes.equals(original) ? 'equal' : 'DIFFERENT'}`);

  await rm(filler, { force: true });
  await uploadPart('upload part, space freed');
  await command('command, space freed', bigOutput);
} finally {
  await svc.close();
  await media.close();
  execFileSync('umount', [mount]);
  await rm(mount, { recursive: true, force: true });
}
