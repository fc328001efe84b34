// Attack: a zip input (input_compressed_folder) holding a playlist or concat list whose entries name
// files outside the working folder. The command line itself passes every check (`-i playlist.m3u8` is
// a relative name); only what ffmpeg can see at run time decides what it reads.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startMediaServer, startService, type ApiClient, type MediaServer, type ServiceFixture } from '../harness.ts';
import {
  assertReadNothing,
  hlsMasterPlaylist,
  hlsPlaylist,
  makeCanaries,
  makeVideo,
  outcome,
  probeShowsCanary,
  probeUnconfined,
  runCommand,
  writeZip,
  type Canaries,
} from './security-fixture.ts';

/** A segment that travels inside the zip (the legitimate case). */
const LOCAL_CLIP = { width: 96, height: 64, seconds: 0.8 };

describe('security: playlists inside a zip input read only the working folder', () => {
  let canaries: Canaries;
  let media: MediaServer;
  let svc: ServiceFixture;
  let attacker: ApiClient;
  /** Zip name -> its entries, and the file the command opens. */
  let attacks: Record<string, { entries: Record<string, string | Buffer>; open: string; command: string }>;

  before(async () => {
    canaries = await makeCanaries();
    const deep = '../'.repeat(12);
    const hls = (entries: Record<string, string | Buffer>, open = 'playlist.m3u8') => ({
      entries,
      open,
      command: `-i ${open} -c copy {{out_1}}`,
    });
    // A variant playlist outside the working folder, next to the canary, naming the canary.
    const outsideVariant = join(canaries.dir, 'variant.m3u8');
    attacks = {
      'absolute.zip': hls({ 'playlist.m3u8': hlsPlaylist([canaries.readable]) }),
      'absolute-root-only.zip': hls({ 'playlist.m3u8': hlsPlaylist([canaries.rootOnly]) }),
      'dotdot.zip': hls({ 'playlist.m3u8': hlsPlaylist([deep + canaries.readable.slice(1)]) }),
      'file-url.zip': hls({ 'playlist.m3u8': hlsPlaylist([`file:${canaries.readable}`]) }),
      'proc-root.zip': hls({ 'playlist.m3u8': hlsPlaylist([`/proc/1/root${canaries.readable}`, `/proc/self/root${canaries.readable}`]) }),
      // The init section is the canary; the one segment is an empty file inside the zip.
      'map.zip': hls({ 'playlist.m3u8': hlsPlaylist(['empty.m4s'], canaries.readable), 'empty.m4s': '' }),
      'variant-inside.zip': hls(
        { 'master.m3u8': hlsMasterPlaylist(['variant.m3u8']), 'variant.m3u8': hlsPlaylist([deep + canaries.readable.slice(1)]) },
        'master.m3u8',
      ),
      'variant-outside.zip': hls({ 'master.m3u8': hlsMasterPlaylist([outsideVariant]) }, 'master.m3u8'),
      // The concat demuxer: the service's -safe 1 refuses absolute and ../ names before the sandbox does.
      'concat.zip': {
        entries: { 'list.txt': `file '${canaries.readable}'\nfile '${deep}${canaries.rootOnly.slice(1)}'\n` },
        open: 'list.txt',
        command: '-f concat -i list.txt -c copy {{out_1}}',
      },
    };
    await writeFile(outsideVariant, hlsPlaylist([canaries.readable]), { mode: 0o644 });
    media = await startMediaServer(async (dir) => {
      for (const [name, attack] of Object.entries(attacks)) await writeZip(join(dir, name), attack.entries);
      const clip = await readFile(await makeVideo(join(dir, 'src', 'local.mp4'), LOCAL_CLIP));
      await writeZip(join(dir, 'legit.zip'), { 'playlist.m3u8': hlsPlaylist(['media/local.mp4']), 'media/local.mp4': clip });
    });
    svc = await startService({ allow: [media.allowEntry] });
    attacker = svc.client(await svc.newAccount('pro'));
  });
  after(async () => {
    await svc?.close();
    await media?.close();
    await canaries?.close();
  });

  test('control: a playlist naming a segment inside the zip works in the sandbox', async () => {
    const record = await runCommand(attacker, {
      ffmpeg_command: '-i playlist.m3u8 -c copy {{out_1}}',
      input_compressed_folder: `${media.url}/legit.zip`,
      output_files: { out_1: 'legit.mkv' },
    });
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    assert.deepEqual([record.output_files.out_1.width, record.output_files.out_1.height], [LOCAL_CLIP.width, LOCAL_CLIP.height]);
  });

  test('control: unconfined, every HLS attack reaches a canary', async () => {
    for (const [name, attack] of Object.entries(attacks)) {
      if (attack.open === 'list.txt') continue; // a concat list is stopped by -safe 1 before any sandbox
      assert.ok(
        probeShowsCanary(await probeUnconfined(attack.entries, attack.open)),
        `${name} does not reach a canary without the sandbox`,
      );
    }
  });

  // Named here because tests are declared before `before` builds the zips.
  for (const name of [
    'absolute.zip',
    'absolute-root-only.zip',
    'dotdot.zip',
    'file-url.zip',
    'proc-root.zip',
    'map.zip',
    'variant-inside.zip',
    'variant-outside.zip',
    'concat.zip',
  ]) {
    test(`attack: ${name} fails or reads nothing outside the working folder`, async (t) => {
      const attack = attacks[name];
      const res = await attacker.post('/v1/run-ffmpeg-command', {
        ffmpeg_command: attack.command,
        input_compressed_folder: `${media.url}/${name}`,
        output_files: { out_1: 'stolen.mkv' },
      });
      if (res.status === 422) return t.diagnostic(`422 ${res.body.detail[0].msg}`); // refused by the parser: also fine
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const { record } = await attacker.waitForEnd(res.body.command_id);
      t.diagnostic(outcome(record));
      await assertReadNothing(record, canaries, name);
      if (record.status === 'FAILED') {
        assert.equal(record.error_status, 'FFMPEG_FAILED', JSON.stringify(record));
        // It failed because the named file is not there for it (or -safe 1 refused the name), not for another reason.
        assert.match(record.error_message, /No such file or directory|Failed to open|Unsafe file name/);
      }
      await canaries.assertUntouched();
    });
  }
});
