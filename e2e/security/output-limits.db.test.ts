// Attack: flood storage with files through outputs that hold many files (OUTPUT_FOLDER, playlist
// outputs). The service runs with FFOP_MAX_OUTPUT_FILES=50: past it the command fails with
// TOO_MANY_OUTPUT_FILES and stores nothing.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { startService, type ApiClient, type ServiceFixture } from '../harness.ts';
import { outcome, runCommand } from './security-fixture.ts';

const MAX_FILES = 50;

/** `frames` PNGs, one file each. */
const framesCommand = (frames: number) => ({
  ffmpeg_command: `-f lavfi -i testsrc=size=32x24:rate=${frames}:duration=1 -f image2 frame_%03d.png`,
  output_files: 'OUTPUT_FOLDER',
});

/** An HLS playlist with about one segment per frame at 10 frames a second. */
const playlistCommand = (seconds: number) => ({
  ffmpeg_command:
    `-f lavfi -i testsrc=size=32x24:rate=10:duration=${seconds} -c:v libx264 -preset ultrafast -g 1 ` +
    '-f hls -hls_time 0.1 -hls_list_size 0 {{out_playlist_x}}',
  output_files: { out_playlist_x: 'index.m3u8' },
});

describe('security: outputs holding too many files fail with TOO_MANY_OUTPUT_FILES', () => {
  let svc: ServiceFixture;

  before(async () => {
    svc = await startService({ env: { FFOP_MAX_OUTPUT_FILES: String(MAX_FILES) } });
  });
  after(async () => {
    await svc?.close();
  });

  /** Every object in the storage folder, all accounts. */
  const storedObjects = async () => (await readdir(join(svc.dataDir, 'storage', 'objects'), { recursive: true })).sort();

  test('control: an OUTPUT_FOLDER and a playlist under the limit succeed', async () => {
    const api = svc.client(await svc.newAccount('pro'));
    const folder = await runCommand(api, framesCommand(40));
    assert.equal(folder.status, 'SUCCESS', JSON.stringify(folder));
    assert.equal(folder.output_files.OUTPUT_FOLDER.file_count, 40);
    const playlist = await runCommand(api, playlistCommand(1));
    assert.equal(playlist.status, 'SUCCESS', JSON.stringify(playlist));
    assert.ok(playlist.output_files.out_playlist_x.file_count > 5, JSON.stringify(playlist.output_files));
  });

  const attacks = [
    { what: 'an OUTPUT_FOLDER of 60 frames', body: () => framesCommand(60) },
    { what: 'a playlist output of about 60 segments', body: () => playlistCommand(6) },
  ];
  for (const { what, body } of attacks)
    test(`attack: ${what} (limit ${MAX_FILES}) fails and stores nothing`, async (t) => {
      const attacker: ApiClient = svc.client(await svc.newAccount('pro'));
      const objectsBefore = await storedObjects();
      const record = await runCommand(attacker, body());
      t.diagnostic(outcome(record));
      assert.equal(record.status, 'FAILED', JSON.stringify(record));
      assert.equal(record.error_status, 'TOO_MANY_OUTPUT_FILES');
      assert.match(record.error_message, new RegExp(`\\b${MAX_FILES}\\b`));
      assert.deepEqual(record.output_files, {});
      assert.deepEqual((await attacker.get('/v1/files')).body, []);
      assert.deepEqual(await storedObjects(), objectsBefore);
    });
});
