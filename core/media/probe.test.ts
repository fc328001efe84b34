import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdir, mkdtemp, rm, writeFile, copyFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffprobeStart, probeMedia as probeConfined, mediaInfoFromProbe, type ProbeOptions } from './probe.ts';
import { handOver } from '../confine/hand-over.ts';
import { testConfinement } from '../confine/testing/test-confinement.ts';
import { contentTypeForFileName } from './mime.ts';

const exec = promisify(execFile);

/** Every probe here runs confined, as the service's do; as root with a uid that owns the test folder. */
let sandboxUid: number | undefined;
async function probeMedia(path: string, extra: Partial<ProbeOptions> = {}) {
  const { confinement } = await testConfinement();
  return probeConfined(path, { confinement, uid: sandboxUid, ...extra });
}

async function ffmpeg(cwd: string, ...args: string[]): Promise<void> {
  await exec('ffmpeg', ['-hide_banner', '-nostdin', '-y', '-loglevel', 'error', ...args], { cwd });
}

const video = ['-f', 'lavfi', '-i', 'testsrc=duration=1:size=320x240:rate=25'];
const sine = ['-f', 'lavfi', '-i', 'sine=duration=1:sample_rate=44100'];

describe('probeMedia on real files', () => {
  let dir: string;
  const file = (name: string): string => join(dir, name);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'probe-test-'));
    await ffmpeg(
      dir,
      ...video,
      ...sine,
      '-c:v',
      'libx264',
      '-pix_fmt',
      'yuv420p',
      '-profile:v',
      'main',
      '-level:v',
      '3.0',
      '-c:a',
      'aac',
      '-shortest',
      'a.mp4',
    );
    await Promise.all([
      copyFile(file('a.mp4'), file('a.mov')),
      ffmpeg(dir, '-i', 'a.mp4', '-c', 'copy', 'a.mkv'),
      ffmpeg(dir, '-i', 'a.mp4', '-vn', '-c', 'copy', 'a.m4a'),
      ffmpeg(dir, ...video, ...sine, '-c:v', 'libvpx-vp9', '-pix_fmt', 'yuv420p', '-c:a', 'libopus', '-shortest', 'a.webm'),
      ffmpeg(dir, ...sine, '-c:a', 'libmp3lame', '-b:a', '128k', 'a.mp3'),
      ffmpeg(dir, ...sine, '-c:a', 'pcm_s16le', 'a.wav'),
      ffmpeg(dir, '-f', 'lavfi', '-i', 'testsrc=size=64x48', '-frames:v', '1', 'a.png'),
      ffmpeg(dir, '-f', 'lavfi', '-i', 'testsrc=size=64x48', '-frames:v', '1', 'still.gif'),
      ffmpeg(dir, '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=10', '-frames:v', '10', 'moving.gif'),
      ffmpeg(dir, ...video, '-c:v', 'libx265', '-pix_fmt', 'yuv420p', '-x265-params', 'level-idc=40:log-level=error', 'hevc.mp4'),
      // every other pair of frames dropped: uneven frame spacing
      ffmpeg(dir, ...video, '-vf', "select='lt(mod(n\\,4)\\,2)'", '-fps_mode', 'vfr', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', 'vfr.mp4'),
      writeFile(file('a.srt'), '1\n00:00:00,000 --> 00:00:01,000\nhello\n'),
      writeFile(file('notes.txt'), 'this is not media\n'),
    ]);
    await Promise.all([
      ffmpeg(dir, '-i', 'a.mp3', '-i', 'a.png', '-map', '0', '-map', '1', '-c', 'copy', '-disposition:v:0', 'attached_pic', 'cover.mp3'),
      ffmpeg(dir, '-i', 'a.mp4', '-c', 'copy', '-f', 'hls', 'stream.m3u8'),
    ]);
    const { uids } = await testConfinement();
    sandboxUid = uids?.acquire();
    if (sandboxUid !== undefined) await handOver(dir, sandboxUid);
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('mp4 with h264 and aac', async () => {
    const info = await probeMedia(file('a.mp4'));
    assert.equal(info.file_type, 'video');
    assert.equal(info.file_format, 'mp4');
    assert.equal(info.codec, 'h264');
    assert.equal(info.mime_type, 'video/mp4');
    assert.ok(info.duration !== null && Math.abs(info.duration - 1) < 0.1, `duration ${info.duration}`);
    assert.equal(info.width, 320);
    assert.equal(info.height, 240);
    assert.equal(info.frame_rate, 25);
    assert.equal(info.is_varying_frame_rate, false);
    assert.equal(info.timebase, '1/12800');
    assert.equal(info.pixel_format, 'yuv420p');
    assert.ok(info.bitrate_video_kb !== null && info.bitrate_video_kb > 0);
    assert.ok(info.bitrate_audio_kb !== null && info.bitrate_audio_kb > 0);
    assert.equal(info.video_profile_level, 'Main@3.0');
  });

  test('a probe started ahead of its file (as a runner does while ffmpeg runs) describes the file written after', async () => {
    const { confinement } = await testConfinement();
    const folder = file('ahead');
    await mkdir(folder);
    if (sandboxUid !== undefined) await handOver(folder, sandboxUid);
    const options = { confinement, uid: sandboxUid };
    const start = ffprobeStart(join(folder, 'late.mp4'), options);
    assert.equal(start.isHeld, true, 'the test confinement holds starts');
    assert.equal(await start.ready(), true);
    await copyFile(file('a.mp4'), join(folder, 'late.mp4'));
    if (sandboxUid !== undefined) await handOver(folder, sandboxUid);
    const info = await probeConfined(join(folder, 'late.mp4'), options, start);
    assert.deepEqual(info, await probeMedia(file('a.mp4')));
  });

  test('the same container named .mov, .mkv, .m4a', async () => {
    const mov = await probeMedia(file('a.mov'));
    assert.equal(mov.file_format, 'mov');
    assert.equal(mov.mime_type, 'video/quicktime');

    const mkv = await probeMedia(file('a.mkv'));
    assert.equal(mkv.file_format, 'matroska');
    assert.equal(mkv.mime_type, 'video/x-matroska');
    assert.equal(mkv.codec, 'h264');

    const m4a = await probeMedia(file('a.m4a'));
    assert.equal(m4a.file_type, 'audio');
    assert.equal(m4a.file_format, 'm4a');
    assert.equal(m4a.mime_type, 'audio/mp4');
    assert.equal(m4a.codec, 'aac');
    assert.equal(m4a.width, null);
    assert.equal(m4a.frame_rate, null);
    assert.equal(m4a.is_varying_frame_rate, null);
    assert.equal(m4a.timebase, '1/44100');
    assert.equal(m4a.bitrate_video_kb, null);
    assert.equal(m4a.video_profile_level, null);
  });

  test('webm with vp9 and opus: video bit rate estimated from the container', async () => {
    const info = await probeMedia(file('a.webm'));
    assert.equal(info.file_type, 'video');
    assert.equal(info.file_format, 'webm');
    assert.equal(info.codec, 'vp9');
    assert.equal(info.mime_type, 'video/webm');
    assert.equal(info.video_profile_level, 'Profile 0');
    assert.ok(info.bitrate_video_kb !== null && info.bitrate_video_kb > 0);
    assert.equal(info.bitrate_audio_kb, null); // Matroska stores no per-stream rate
  });

  test('mp3, wav, and an mp3 with cover art are audio', async () => {
    const mp3 = await probeMedia(file('a.mp3'));
    assert.equal(mp3.file_type, 'audio');
    assert.equal(mp3.file_format, 'mp3');
    assert.equal(mp3.codec, 'mp3');
    assert.equal(mp3.mime_type, 'audio/mpeg');
    assert.equal(mp3.bitrate_audio_kb, 128);

    const wav = await probeMedia(file('a.wav'));
    assert.equal(wav.file_type, 'audio');
    assert.equal(wav.codec, 'pcm_s16le');
    assert.equal(wav.mime_type, 'audio/wav');
    assert.equal(wav.bitrate_audio_kb, 705.6);

    const cover = await probeMedia(file('cover.mp3'));
    assert.equal(cover.file_type, 'audio');
    assert.equal(cover.codec, 'mp3');
    assert.equal(cover.width, null);
  });

  test('png and a one-frame gif are images; an animated gif is video', async () => {
    const png = await probeMedia(file('a.png'));
    assert.equal(png.file_type, 'image');
    assert.equal(png.codec, 'png');
    assert.equal(png.mime_type, 'image/png');
    assert.equal(png.width, 64);
    assert.equal(png.height, 48);
    assert.equal(png.duration, null);
    assert.equal(png.frame_rate, null);

    const still = await probeMedia(file('still.gif'));
    assert.equal(still.file_type, 'image');
    assert.equal(still.mime_type, 'image/gif');

    const moving = await probeMedia(file('moving.gif'));
    assert.equal(moving.file_type, 'video');
    assert.equal(moving.mime_type, 'image/gif');
  });

  test('hevc level is level/30', async () => {
    const info = await probeMedia(file('hevc.mp4'));
    assert.equal(info.codec, 'hevc');
    assert.equal(info.video_profile_level, 'Main@4.0');
  });

  test('uneven frame spacing is a varying frame rate', async () => {
    const info = await probeMedia(file('vfr.mp4'));
    assert.equal(info.is_varying_frame_rate, true);
    assert.ok(info.frame_rate !== null && info.frame_rate < 25);
  });

  test('subtitles and an HLS playlist', async () => {
    const srt = await probeMedia(file('a.srt'));
    assert.equal(srt.file_type, 'subtitles');
    assert.equal(srt.codec, 'subrip');
    assert.equal(srt.mime_type, 'application/x-subrip');

    const hls = await probeMedia(file('stream.m3u8'));
    assert.equal(hls.file_type, 'video');
    assert.equal(hls.file_format, 'hls');
    assert.equal(hls.mime_type, 'application/vnd.apple.mpegurl');
  });

  test('a file ffprobe cannot read: error with ffprobe message, no local path', async () => {
    await assert.rejects(probeMedia(file('notes.txt')), (err: Error) => {
      assert.match(err.message, /notes\.txt.*Invalid data found/s);
      assert.ok(!err.message.includes(dir), err.message);
      return true;
    });
    await assert.rejects(probeMedia(file('missing.mp4')), /No such file/);
  });

  test('neither a URL given as the path nor a playlist entry is fetched', async () => {
    let requests = 0;
    const server = createServer((_req, res) => {
      requests++;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      await writeFile(file('evil.m3u8'), `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nhttp://127.0.0.1:${port}/x.ts\n#EXT-X-ENDLIST\n`);
      await assert.rejects(probeMedia(file('evil.m3u8')));
      // a path is always a local file, even when it reads like a URL
      await assert.rejects(probeMedia(`http://127.0.0.1:${port}/a.mp4`), /No such file/);
      assert.equal(requests, 0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('an ffprobe that hangs is killed at the timeout', async () => {
    // opening a FIFO with no writer blocks forever
    await exec('mkfifo', [file('hang.mp4')]);
    await assert.rejects(probeMedia(file('hang.mp4'), { timeoutMs: 300 }), /timed out after 300 ms/);
  });

  test('ffprobe output beyond the cap is refused', async () => {
    await assert.rejects(probeMedia(file('a.mp4'), { maxOutputBytes: 100 }), /too much output/);
  });
});

describe('mediaInfoFromProbe', () => {
  test('estimates the video bit rate as the container rate minus known audio rates', () => {
    const info = mediaInfoFromProbe(
      {
        format: { format_name: 'matroska,webm', bit_rate: '1000000', duration: '10.5' },
        streams: [
          { codec_type: 'video', codec_name: 'h264', profile: 'High', level: 40, avg_frame_rate: '30000/1001', r_frame_rate: '30000/1001' },
          { codec_type: 'audio', codec_name: 'aac', bit_rate: '128000' },
        ],
      },
      'x.mkv',
    );
    assert.equal(info.bitrate_video_kb, 872);
    assert.equal(info.bitrate_audio_kb, 128);
    assert.equal(info.frame_rate, 29.97);
    assert.equal(info.is_varying_frame_rate, false);
    assert.equal(info.video_profile_level, 'High@4.0');
    assert.equal(info.duration, 10.5);
  });

  test('falls back to r_frame_rate and to the container rate of an audio-only file', () => {
    const video = mediaInfoFromProbe(
      { format: { format_name: 'mpegts' }, streams: [{ codec_type: 'video', avg_frame_rate: '0/0', r_frame_rate: '50/1' }] },
      'x.ts',
    );
    assert.equal(video.frame_rate, 50);
    assert.equal(video.is_varying_frame_rate, null);
    assert.equal(video.file_format, 'mpegts');
    assert.equal(video.mime_type, 'video/mp2t');

    const flac = mediaInfoFromProbe(
      { format: { format_name: 'flac', bit_rate: '162680' }, streams: [{ codec_type: 'audio', codec_name: 'flac' }] },
      'x.flac',
    );
    assert.equal(flac.bitrate_audio_kb, 162.68);
    assert.equal(flac.mime_type, 'audio/flac');
  });

  test('streams of no known kind', () => {
    assert.equal(mediaInfoFromProbe({ format: {}, streams: [{ codec_type: 'data' }] }, 'x.bin').file_type, 'data');
    const none = mediaInfoFromProbe({}, 'x.bin');
    assert.equal(none.file_type, 'other');
    assert.equal(none.mime_type, 'application/octet-stream');
  });
});

describe('contentTypeForFileName', () => {
  test('media types by extension, pages never rendered', () => {
    assert.equal(contentTypeForFileName('clip.MP4'), 'video/mp4');
    assert.equal(contentTypeForFileName('dir/a.m3u8'), 'application/vnd.apple.mpegurl');
    assert.equal(contentTypeForFileName('a.mpd'), 'application/dash+xml');
    assert.equal(contentTypeForFileName('a.vtt'), 'text/vtt');
    assert.equal(contentTypeForFileName('a.jpeg'), 'image/jpeg');
    assert.equal(contentTypeForFileName('out.zip'), 'application/zip');
    assert.equal(contentTypeForFileName('page.html'), 'application/octet-stream');
    assert.equal(contentTypeForFileName('image.svg'), 'application/octet-stream');
    assert.equal(contentTypeForFileName('noextension'), 'application/octet-stream');
    assert.equal(contentTypeForFileName('.mp4'), 'application/octet-stream');
  });
});
