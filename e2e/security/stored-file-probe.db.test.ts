// Attack: a stored or uploaded file that is a playlist (HLS .m3u8, DASH .mpd) whose entries name files
// outside it. The service probes every stored file with ffprobe; unconfined, ffprobe follows the
// entries and the file record would carry the named file's width, height and duration.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startMediaServer, startService, type ApiClient, type MediaServer, type ServiceFixture } from '../harness.ts';
import {
  assertNotFrom,
  dashManifest,
  hlsPlaylist,
  makeCanaries,
  makeVideo,
  probeShowsCanary,
  probeUnconfined,
  uploadFile,
  waitForFile,
  type Canaries,
} from './security-fixture.ts';

/** The victim's private stored file: a size no other file of the test has. */
const VICTIM_CLIP = { width: 240, height: 136, seconds: 1.6 };

describe('security: probing stored files confines playlists to themselves', () => {
  let canaries: Canaries;
  let media: MediaServer;
  let svc: ServiceFixture;
  let attacker: ApiClient;
  let victim: ApiClient;
  /** Playlist name -> text; each names a canary in another way. */
  let playlists: Record<string, string>;

  before(async () => {
    canaries = await makeCanaries();
    const deep = '../'.repeat(12);
    playlists = {
      'absolute.m3u8': hlsPlaylist([canaries.readable]),
      'absolute-root-only.m3u8': hlsPlaylist([canaries.rootOnly]),
      'dotdot.m3u8': hlsPlaylist([deep + canaries.readable.slice(1)]),
      'file-url.m3u8': hlsPlaylist([`file:${canaries.readable}`]),
      'proc-root.m3u8': hlsPlaylist([`/proc/1/root${canaries.readable}`, `/proc/self/root${canaries.readable}`]),
      'manifest.mpd': dashManifest(canaries.readable),
    };
    media = await startMediaServer(async (dir) => {
      for (const [name, text] of Object.entries(playlists)) await writeFile(join(dir, name), text);
    });
    svc = await startService({ allow: [media.allowEntry] });
    attacker = svc.client(await svc.newAccount('pro'));
    victim = svc.client(await svc.newAccount('pro'));
  });
  after(async () => {
    await svc?.close();
    await media?.close();
    await canaries?.close();
  });

  test('control: unconfined, each playlist shows a canary; both canaries are readable by the test', async () => {
    await readFile(canaries.readable);
    await readFile(canaries.rootOnly);
    for (const [name, text] of Object.entries(playlists)) {
      assert.ok(probeShowsCanary(await probeUnconfined({ [name]: text }, name)), `${name} does not reach a canary without the sandbox`);
    }
  });

  test('attack: store-file of each playlist is stored without any canary metadata', async () => {
    for (const name of Object.keys(playlists)) {
      const res = await attacker.post('/v1/files/store-file', { file_url: `${media.url}/${name}` });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const file = await waitForFile(attacker, res.body.file_id);
      assert.equal(file.status, 'STORED', `${name}: ${JSON.stringify(file)}`);
      assert.deepEqual(
        [file.file_type, file.width, file.height, file.duration],
        ['other', null, null, null],
        `${name}: ${JSON.stringify(file)}`,
      );
      assertNotFrom(file, name);
    }
    await canaries.assertUntouched();
  });

  test('attack: direct upload of each playlist is stored without any canary metadata', async () => {
    for (const [name, text] of Object.entries(playlists)) {
      const file = await waitForFile(attacker, await uploadFile(attacker, name, text));
      assert.equal(file.status, 'STORED', `${name}: ${JSON.stringify(file)}`);
      assert.deepEqual(
        [file.file_type, file.width, file.height, file.duration],
        ['other', null, null, null],
        `${name}: ${JSON.stringify(file)}`,
      );
      assertNotFrom(file, name);
    }
    await canaries.assertUntouched();
  });

  test("attack: a playlist naming another account's private stored file in the storage folder reads nothing", async () => {
    const clip = await readFile(await makeVideo(join(media.dir, 'private.mp4'), VICTIM_CLIP));
    const victimFile = await waitForFile(victim, await uploadFile(victim, 'private.mp4', clip, true));
    // The positive control: the same sandboxed probe reads a real media file fine.
    assert.equal(victimFile.status, 'STORED');
    assert.deepEqual([victimFile.width, victimFile.height], [VICTIM_CLIP.width, VICTIM_CLIP.height]);
    const objectPath = join(svc.dataDir, 'storage', 'objects', (await svc.service.files.findById(victimFile.file_id))!.storageKey);
    assert.equal((await stat(objectPath)).size, clip.length, 'the victim file is where the attack looks');

    // Stored files are probed in a temporary folder under the data dir's work folder: reach the
    // storage folder from there, and by absolute path.
    const relative = `../../storage/objects/${(await svc.service.files.findById(victimFile.file_id))!.storageKey}`;
    const playlist = hlsPlaylist([objectPath, relative, `/proc/self/root${objectPath}`]);
    const control = await probeUnconfined({ 'steal.m3u8': playlist }, 'steal.m3u8');
    assert.equal(control?.streams?.[0]?.width, VICTIM_CLIP.width, 'without the sandbox the playlist reads the victim file');

    const uploaded = await waitForFile(attacker, await uploadFile(attacker, 'steal.m3u8', playlist));
    await writeFile(join(media.dir, 'steal.m3u8'), playlist);
    const stored = await waitForFile(
      attacker,
      (await attacker.post('/v1/files/store-file', { file_url: `${media.url}/steal.m3u8` })).body.file_id,
    );
    for (const file of [uploaded, stored]) {
      assert.equal(file.status, 'STORED', JSON.stringify(file));
      assert.deepEqual([file.width, file.height, file.duration], [null, null, null], JSON.stringify(file));
      assertNotFrom(file, 'steal.m3u8', VICTIM_CLIP);
    }
    // The victim's file is intact and still private.
    assert.deepEqual(await readFile(objectPath), clip);
    assert.equal((await fetch(victimFile.storage_url)).status, 403);
  });
});
