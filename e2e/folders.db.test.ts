// Zip inputs, OUTPUT_FOLDER outputs and playlist outputs, end to end.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { zipFiles } from '../core/archive/zip-files.ts';
import { makeClip, probeJson, startMediaServer, startService, type MediaServer, type ServiceFixture } from './harness.ts';

describe('zip inputs, folders and playlists', () => {
  let media: MediaServer;
  let svc: ServiceFixture;

  before(async () => {
    media = await startMediaServer(async (dir) => {
      const src = join(dir, 'src');
      await mkdir(join(src, 'media'), { recursive: true });
      await mkdir(join(src, 'frames'));
      await makeClip(src, 'video.mp4', 1);
      await makeClip(join(src, 'media'), 'clip.mp4', 1);
      await writeFile(join(src, 'list.txt'), "file 'video.mp4'\nfile 'media/clip.mp4'\n");
      execFileSync('ffmpeg', [
        '-loglevel',
        'error',
        '-f',
        'lavfi',
        '-i',
        'testsrc=size=64x48:rate=5:duration=1',
        join(src, 'frames', 'img_%03d.png'),
      ]);
      const frames = Array.from({ length: 5 }, (_, i) => `frames/img_${String(i + 1).padStart(3, '0')}.png`);
      await zipFiles(src, ['video.mp4', 'media/clip.mp4', 'list.txt', ...frames], join(dir, 'inputs.zip'));
      await makeClip(dir, 'clip.mp4', 3);
      execFileSync('python3', [
        '-c',
        `import zipfile\nwith zipfile.ZipFile('${join(dir, 'evil.zip')}', 'w') as z: z.writestr('../escape.txt', 'x')`,
      ]);
    });
    svc = await startService({ allow: [media.allowEntry] });
  });
  after(async () => {
    await svc?.close();
    await media?.close();
  });

  test('input_compressed_folder: files by relative path, concat lists, image sequences', async () => {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command:
        '-f concat -i list.txt -i media/clip.mp4 -framerate 5 -i frames/img_%03d.png ' +
        '-map 0:v -c:v libx264 -preset ultrafast {{out_joined}} -map 1:v -frames:v 1 {{out_frame}} ' +
        '-map 2:v -c:v libx264 -preset ultrafast -pix_fmt yuv420p {{out_seq}}',
      input_compressed_folder: `${media.url}/inputs.zip`,
      output_files: { out_joined: 'joined.mp4', out_frame: 'frame.png', out_seq: 'seq.mp4' },
    });
    const { record } = await api.waitForEnd(id);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    assert.ok(Math.abs(record.output_files.out_joined.duration - 2) < 0.2, `joined ${record.output_files.out_joined.duration}`);
    assert.equal(record.output_files.out_frame.width, 320);
    assert.equal(record.output_files.out_seq.width, 64);
    assert.ok(Math.abs(record.output_files.out_seq.duration - 1) < 0.1);
    assert.equal(record.original_request.input_compressed_folder, `${media.url}/inputs.zip`);
  });

  test('a zip with ../ names fails the command with INVALID_INPUT_ARCHIVE', async () => {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command: '-i escape.txt {{out_1}}',
      input_compressed_folder: `${media.url}/evil.zip`,
      output_files: { out_1: 'o.mp4' },
    });
    const { record } = await api.waitForEnd(id);
    assert.equal(record.status, 'FAILED');
    assert.equal(record.error_status, 'INVALID_INPUT_ARCHIVE');
    assert.match(record.error_message, /escape\.txt|outside|invalid/i);
  });

  test('OUTPUT_FOLDER: every file the command wrote comes back as one zip', async () => {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command:
        '-i {{in_1}} -c:v libx264 -preset ultrafast -g 25 -c:a aac ' +
        '-f hls -hls_time 1 -hls_list_size 0 -hls_segment_filename seg_%03d.ts playlist.m3u8',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: 'OUTPUT_FOLDER',
    });
    const { record } = await api.waitForEnd(id);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    const folder = record.output_files.OUTPUT_FOLDER;
    assert.ok(folder.file_count >= 3, `file_count ${folder.file_count}`);
    assert.ok(folder.size_mbytes > 0 && folder.size_compressed_mbytes > 0);
    assert.equal(folder.mime_type, 'application/zip');
    const zip = Buffer.from(await (await fetch(folder.storage_url)).arrayBuffer());
    const dir = await mkdtemp(join(tmpdir(), 'ffop-out-'));
    try {
      await writeFile(join(dir, 'out.zip'), zip);
      const names = execFileSync('python3', [
        '-c',
        `import zipfile,sys\nprint('\\n'.join(sorted(zipfile.ZipFile(sys.argv[1]).namelist())))`,
        join(dir, 'out.zip'),
      ])
        .toString()
        .trim()
        .split('\n');
      assert.ok(names.includes('playlist.m3u8'), names.join(','));
      assert.ok(names.includes('seg_000.ts'));
      assert.equal(names.length, folder.file_count);
      assert.ok(!names.some((n) => n.startsWith('.')), 'inputs and service folders are not part of the output');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a playlist output is stored with its segments and streams from its storage_url', async () => {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command: '-i {{in_1}} -c:v libx264 -preset ultrafast -g 25 -c:a aac -f hls -hls_time 1 -hls_list_size 0 {{out_playlist_hls}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_playlist_hls: 'index.m3u8' },
    });
    const { record } = await api.waitForEnd(id);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    const playlist = record.output_files.out_playlist_hls;
    assert.ok(playlist.file_count >= 3, `file_count ${playlist.file_count}`);
    assert.equal(playlist.mime_type, 'application/vnd.apple.mpegurl');
    const manifest = await (await fetch(playlist.storage_url)).text();
    assert.match(manifest, /#EXTM3U/);
    const probed = await probeJson(playlist.storage_url);
    assert.ok(probed.streams.some((s: any) => s.codec_type === 'video'));
    assert.ok(Math.abs(Number(probed.format.duration) - 3) < 0.5, `duration ${probed.format.duration}`);
    const files = await api.get('/v1/files');
    const entry = files.body.find((f: any) => f.file_id === playlist.file_id);
    assert.equal(entry.file_count, playlist.file_count);
    // Deleting the playlist removes its segments too.
    await api.request('DELETE', `/v1/files/${playlist.file_id}`);
    const segment = new URL(
      manifest.split('\n').find((l) => l.endsWith('.ts'))!,
      playlist.storage_url,
    );
    assert.equal((await fetch(segment)).status, 404);
  });

  test('playlist and folder rules are 422s', async () => {
    const api = svc.client();
    const r1 = await api.post('/v1/run-ffmpeg-command', {
      ffmpeg_command: '-i {{in_1}} {{out_playlist_1}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_playlist_1: 'a.mp4' },
    });
    assert.equal(r1.status, 422);
    assert.deepEqual(r1.body.detail[0].loc, ['body', 'output_files', 'out_playlist_1']);
    const r2 = await api.post('/v1/run-ffmpeg-command', {
      ffmpeg_command: '-i {{in_1}} x.mp4',
      input_files: { in_1: `${media.url}/clip.mp4` },
      input_compressed_folder: `${media.url}/inputs.zip`,
      output_files: 'OUTPUT_FOLDER',
    });
    assert.equal(r2.status, 422);
    assert.deepEqual(r2.body.detail[0].loc, ['body', 'input_compressed_folder']);
    const r3 = await api.post('/v1/run-ffmpeg-command', {
      ffmpeg_command: '-i {{in_1}} /tmp/x.mp4',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: 'OUTPUT_FOLDER',
    });
    assert.equal(r3.status, 422);
  });
});
