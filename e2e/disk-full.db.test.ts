// A full disk, for real: the service's storage and work folders on a 64 MiB tmpfs (needs root to
// mount), filled to a few free MiB for each case. Upload parts get 507 with a detail (at once when
// they cannot fit, or when the write meets ENOSPC half-way); commands fail OUT_OF_SPACE whichever write
// met the full disk; an output is stored without a second copy; a file stored before stays whole and
// downloadable, even when a PUT over it fails; once space is freed everything works again.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { mkdtemp, readdir, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { makeClip, startMediaServer, startService, waitForFile, type MediaServer, type ServiceFixture } from './harness.ts';

const MiB = 1024 * 1024;
const isRoot = process.getuid?.() === 0;

// A raw video output of 8 frames of 1024x1024 rgb24: 24 MiB.
const BIG_OUTPUT = {
  ffmpeg_command: '-f lavfi -i color=s=1024x1024 -frames:v 8 -c:v rawvideo -pix_fmt rgb24 -f nut {{out_1}}',
  output_files: { out_1: 'big.nut' },
};
const BIG_OUTPUT_BYTES = 8 * 1024 * 1024 * 3;

describe('a full disk', { skip: isRoot ? false : 'mounting a small tmpfs needs root' }, () => {
  let mount: string;
  let svc: ServiceFixture;
  let media: MediaServer;
  let filler: string;

  before(async () => {
    mount = await mkdtemp(join(tmpdir(), 'ffop-disk-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', mount]);
    filler = join(mount, 'filler');
    media = await startMediaServer(async (dir) => {
      await makeClip(dir, 'clip.mp4', 2);
      await writeFile(join(dir, 'big.bin'), randomBytes(16 * MiB));
    });
    svc = await startService({
      allow: [media.allowEntry],
      env: { FFOP_STORAGE_DIR: join(mount, 'storage'), FFOP_WORK_DIR: join(mount, 'work'), FFOP_DISK_RESERVE_BYTES: String(MiB) },
    });
  });
  after(async () => {
    await svc?.close();
    await media?.close();
    if (mount) {
      execFileSync('umount', ['-l', mount]); // lazy: even if a stuck process still holds it
      await rm(mount, { recursive: true, force: true });
    }
  });

  /**
   * Leaves about `free` bytes free on the tmpfs, once the last command's working folder is gone (the
   * runner removes it just after its result). ENOSPC: the service wrote meanwhile, and the disk is full.
   */
  async function fillTo(free: number): Promise<void> {
    await rm(filler, { force: true });
    while ((await readdir(join(mount, 'work')).catch(() => [])).some((name) => name.startsWith('step-'))) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const s = await statfs(mount);
    await writeFile(filler, Buffer.alloc(Math.max(0, s.bavail * s.bsize - free))).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOSPC') throw err;
    });
  }

  async function initUpload() {
    const init = await svc.client().post('/v1/files/init-upload', { filename: 'part.bin', size_bytes: 10 * MiB, part_size: 5 * MiB });
    assert.equal(init.status, 200, JSON.stringify(init.body));
    return init.body as { file_id: string; upload_urls: string[] };
  }

  /**
   * PUTs `first`, then calls `between`, then PUTs `rest`, as one request; resolves with the answer, and
   * only once `between` is done: a fill still writing when the caller's next fill removes its file would
   * free that space later (CI, once: a 16 MiB download then fit on a disk left with 512 KiB). Answered
   * before `first` is sent (a 507 at once), it does not call `between` at all.
   */
  function putInTwo(url: string, first: Buffer, between: () => Promise<void>, rest: Buffer): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      let answered = false;
      let betweenDone: Promise<void> = Promise.resolve();
      const req = request(url, { method: 'PUT', headers: { 'content-length': first.length + rest.length } }, (res) => {
        let body = '';
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => {
          answered = true;
          void betweenDone.then(() => resolve({ status: res.statusCode ?? 0, body }), reject);
        });
      });
      req.on('error', reject);
      // The service may answer 507 and close before the whole body is sent (it meets the full disk). Once
      // the answer has ended, node's client no longer hands its socket's errors to the request, and an
      // EPIPE from the rest of the body was thrown uncaught (CI, once, under load): the answer is what counts.
      req.on('socket', (socket) => socket.on('error', (err) => reject(err)));
      const fail = (err: Error) => {
        req.destroy(); // or the service would wait for the rest of the body
        reject(err);
      };
      req.write(first, () => {
        if (answered) {
          req.destroy(); // nothing more to send
          return;
        }
        betweenDone = between();
        void betweenDone.then(() => req.end(rest), fail);
      });
    });
  }

  test('OUT_OF_SPACE, 507s, outputs stored without a copy, stored files intact, and recovery', async () => {
    const api = svc.client();
    const stored = await api.post('/v1/files/store-file', { file_url: `${media.url}/clip.mp4` });
    const clip = await waitForFile(api, stored.body.file_id);
    assert.equal(clip.status, 'STORED');
    const original = Buffer.from(await (await fetch(clip.storage_url)).arrayBuffer());

    // An upload part that cannot fit: 507 at once, before its body is read, in the spec's error shape.
    await fillTo(2 * MiB);
    const upload = await initUpload();
    const refused = await fetch(upload.upload_urls[0], { method: 'PUT', body: new Uint8Array(randomBytes(5 * MiB)) });
    assert.equal(refused.status, 507);
    assert.ok(refused.headers.get('retry-after'));
    assert.match((await refused.json()).detail, /ran out of disk space and could not store part 1 \(5242880 bytes\)/);

    // A part that fits when it starts but meets a full disk half-way: 507 too, and it counts as not sent.
    await fillTo(8 * MiB);
    const halfWay = await putInTwo(upload.upload_urls[0], randomBytes(MiB), () => fillTo(0), randomBytes(4 * MiB));
    assert.equal(halfWay.status, 507, halfWay.body);
    assert.match(JSON.parse(halfWay.body).detail, /ran out of disk space/);
    await rm(filler, { force: true });
    const parts = await api.post(`/v1/files/${upload.file_id}/complete-upload`, { parts: [{ part_number: 1, etag: '"x"' }] });
    assert.equal(parts.status, 422, 'the half-written part is not listed as uploaded');

    // A PUT over a stored file that meets a full disk leaves the stored file as it was.
    const row = (await svc.service.files.findById(stored.body.file_id))!;
    const overwrite = await svc.service.storage.presignPut(row.storageKey, 60);
    await fillTo(4 * MiB);
    const over = await putInTwo(overwrite, randomBytes(2 * MiB), () => fillTo(0), randomBytes(4 * MiB));
    assert.equal(over.status, 507, over.body);

    // Commands: whichever write meets the full disk, OUT_OF_SPACE with a message naming it.
    await fillTo(512 * 1024);
    const download = await api.waitForEnd(
      await api.submit({
        input_files: { in_1: `${media.url}/big.bin` },
        ffmpeg_command: '-f rawvideo -s 512x512 -pix_fmt rgb24 -i {{in_1}} -frames:v 1 {{out_1}}',
        output_files: { out_1: 'a.png' },
      }),
    );
    assert.equal(download.record.error_status, 'OUT_OF_SPACE', JSON.stringify(download.record));
    assert.match(download.record.error_message, /ran out of disk space while downloading http:\/\/127\.0\.0\.1:\d+\/big\.bin/);

    await fillTo(4 * MiB);
    const ffmpeg = await api.waitForEnd(await api.submit(BIG_OUTPUT));
    assert.equal(ffmpeg.record.error_status, 'OUT_OF_SPACE', JSON.stringify(ffmpeg.record));
    assert.match(ffmpeg.record.error_message, /ran out of disk space while ffmpeg wrote its output.*No space left on device/s);

    // 24 MiB output with 36 MiB free: a second copy would not fit, a move does.
    await fillTo(36 * MiB);
    const big = await api.waitForEnd(await api.submit(BIG_OUTPUT));
    assert.equal(big.record.status, 'SUCCESS', JSON.stringify(big.record));
    const output = await fetch(big.record.output_files.out_1.storage_url, { method: 'HEAD' });
    assert.equal(output.status, 200);
    const size = Number(output.headers.get('content-length'));
    assert.ok(size > BIG_OUTPUT_BYTES && size < BIG_OUTPUT_BYTES + 64 * 1024, `a 24 MiB output, not ${size} bytes`);

    // Stored before: whole and downloadable.
    const again = await fetch(clip.storage_url);
    assert.equal(again.status, 200);
    assert.ok(Buffer.from(await again.arrayBuffer()).equals(original));

    // Space freed: the part goes in, a command runs.
    await rm(filler, { force: true });
    const fresh = await initUpload();
    const ok = await fetch(fresh.upload_urls[0], { method: 'PUT', body: new Uint8Array(randomBytes(5 * MiB)) });
    assert.equal(ok.status, 200, await ok.text());
    const small = await api.waitForEnd(
      await api.submit({ ffmpeg_command: '-f lavfi -i color=s=32x32:d=0.1 -frames:v 1 {{out_1}}', output_files: { out_1: 'a.png' } }),
    );
    assert.equal(small.record.status, 'SUCCESS', JSON.stringify(small.record));
  });
});
