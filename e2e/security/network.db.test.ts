// Attack: make the service or ffmpeg connect to a loopback listener that is not on the allowlist:
// as an input URL (directly or through a redirect from the allowed server), in the command line, and
// from inside playlists and concat lists. The listener serves the canary video and counts connections:
// it must see none.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startMediaServer, startService, type ApiClient, type MediaServer, type ServiceFixture } from '../harness.ts';
import {
  assertReadNothing,
  dashManifest,
  hlsPlaylist,
  makeCanaries,
  makeVideo,
  outcome,
  probeShowsCanary,
  probeUnconfined,
  runCommand,
  startCountingListener,
  uploadFile,
  waitForFile,
  writeZip,
  type Canaries,
  type CountingListener,
} from './security-fixture.ts';

describe('security: nothing reaches a loopback listener that is not on the allowlist', () => {
  let canaries: Canaries;
  let media: MediaServer;
  let forbidden: CountingListener;
  let svc: ServiceFixture;
  let attacker: ApiClient;
  /** Connections the controls made; attacks must not add any. */
  let controlConnections = 0;
  let playlists: Record<string, string>;

  before(async () => {
    canaries = await makeCanaries();
    forbidden = await startCountingListener(await readFile(canaries.readable));
    playlists = {
      'http-segment.m3u8': hlsPlaylist([`${forbidden.url}/segment.mp4`]),
      'tcp-segment.m3u8': hlsPlaylist([`tcp://127.0.0.1:${forbidden.port}`]),
      'http-map.m3u8': hlsPlaylist(['empty.m4s'], `${forbidden.url}/init.mp4`),
      'manifest.mpd': dashManifest(`${forbidden.url}/video.mp4`),
    };
    media = await startMediaServer(async (dir) => {
      await makeVideo(join(dir, 'clip.mp4'), { width: 64, height: 48, seconds: 0.5 });
      for (const [name, text] of Object.entries(playlists)) {
        await writeZip(join(dir, `${name}.zip`), { [name]: text, 'empty.m4s': '' });
      }
      await writeZip(join(dir, 'concat.zip'), {
        'list.txt': `file '${forbidden.url}/video.mp4'\nfile 'tcp://127.0.0.1:${forbidden.port}'\n`,
      });
    });
    // The allowlist names the media server's port only: the listener on another port is forbidden.
    svc = await startService({ allow: [media.allowEntry] });
    attacker = svc.client(await svc.newAccount('pro'));
  });
  after(async () => {
    await svc?.close();
    await media?.close();
    await forbidden?.close();
    await canaries?.close();
  });

  test('control: the listener serves the canary to the test, and unconfined ffprobe follows an http playlist entry to it', async () => {
    const res = await fetch(`${forbidden.url}/video.mp4`);
    assert.equal(res.status, 200);
    assert.ok(Buffer.from(await res.arrayBuffer()).includes(canaries.marker));
    const probe = await probeUnconfined({ 'http-segment.m3u8': playlists['http-segment.m3u8'] }, 'http-segment.m3u8', 'file,http,tcp');
    assert.ok(probeShowsCanary(probe), 'without the protocol whitelist and the sandbox the playlist reaches the listener');
    assert.ok(forbidden.connections() >= 2);
    controlConnections = forbidden.connections();
  });

  test(
    'attack: the listener as an input, a zip input, a stored file, ' +
      'and behind a redirect from the allowed server: FORBIDDEN_INPUT_ADDRESS',
    async (t) => {
      const direct = `${forbidden.url}/video.mp4`;
      const redirected = `${media.url}/video.mp4?redirect_to=${encodeURIComponent(direct)}`;
      for (const url of [direct, redirected]) {
        const input = await runCommand(attacker, {
          ffmpeg_command: '-i {{in_1}} -c copy {{out_1}}',
          input_files: { in_1: url },
          output_files: { out_1: 'o.mp4' },
        });
        const zip = await runCommand(attacker, {
          ffmpeg_command: '-i video.mp4 -c copy {{out_1}}',
          input_compressed_folder: url,
          output_files: { out_1: 'o.mp4' },
        });
        const stored = await waitForFile(attacker, (await attacker.post('/v1/files/store-file', { file_url: url })).body.file_id);
        for (const [what, record, message] of [
          ['input', input, input.error_message],
          ['zip', zip, zip.error_message],
          ['store-file', stored, stored.external_error_message],
        ]) {
          t.diagnostic(`${what} ${url === direct ? 'direct' : 'redirect'}: ${record.status} ${record.error_status} ${message}`);
          assert.equal(record.status, 'FAILED', `${what} ${url}: ${JSON.stringify(record)}`);
          assert.equal(record.error_status, 'FORBIDDEN_INPUT_ADDRESS', `${what} ${url}: ${JSON.stringify(record)}`);
          assert.match(message, /127\.0\.0\.1/);
        }
      }
      assert.ok(
        media.requests.some((r) => r.includes('redirect_to')),
        'the redirect was followed to its second hop',
      );
      assert.equal(forbidden.connections(), controlConnections, 'the listener was reached');
    },
  );

  test('attack: http:// and tcp:// inputs on the command line are refused with 422', async () => {
    for (const target of [`${forbidden.url}/video.mp4`, `tcp://127.0.0.1:${forbidden.port}`]) {
      const res = await attacker.post('/v1/run-ffmpeg-command', {
        ffmpeg_command: `-i ${target} -c copy {{out_1}}`,
        output_files: { out_1: 'o.mp4' },
      });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.match(res.body.detail[0].msg, /protocols/);
    }
    assert.equal(forbidden.connections(), controlConnections, 'the listener was reached');
  });

  // Named here because tests are declared before `before` builds the zips.
  for (const name of ['http-segment.m3u8', 'tcp-segment.m3u8', 'http-map.m3u8', 'manifest.mpd', 'list.txt']) {
    test(`attack: ${name} inside a zip input names the listener; ffmpeg reaches nothing`, async (t) => {
      const concat = name === 'list.txt';
      const res = await attacker.post('/v1/run-ffmpeg-command', {
        ffmpeg_command: concat ? '-f concat -i list.txt -c copy {{out_1}}' : `-i ${name} -c copy {{out_1}}`,
        input_compressed_folder: `${media.url}/${concat ? 'concat' : name}.zip`,
        output_files: { out_1: 'stolen.mkv' },
      });
      if (res.status === 422) {
        t.diagnostic(`422 ${res.body.detail[0].msg}`);
      } else {
        assert.equal(res.status, 200, JSON.stringify(res.body));
        const { record } = await attacker.waitForEnd(res.body.command_id);
        t.diagnostic(outcome(record));
        await assertReadNothing(record, canaries, name);
        if (record.status === 'FAILED') assert.equal(record.error_status, 'FFMPEG_FAILED', JSON.stringify(record));
      }
      assert.equal(forbidden.connections(), controlConnections, 'the listener was reached');
    });
  }

  test('attack: stored and uploaded playlists naming the listener are probed without a connection', async () => {
    for (const [name, text] of Object.entries(playlists)) {
      const file = await waitForFile(attacker, await uploadFile(attacker, name, text));
      assert.equal(file.status, 'STORED', `${name}: ${JSON.stringify(file)}`);
      assert.deepEqual([file.width, file.height, file.duration], [null, null, null], `${name}: ${JSON.stringify(file)}`);
    }
    assert.equal(forbidden.connections(), controlConnections, 'the listener was reached');
  });
});
