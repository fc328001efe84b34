// Commands that real clients send, taken from Rendi's documentation and from public client libraries
// written for it: burned-in subtitles, ASS with fonts from a zip, drawtext with a font input and escaped
// text, a font attached to MKV, an overlay read through movie=, a concat list inside a zip. Each must
// SUCCEED through the public API, its outputs probed.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { zipFiles } from '../core/archive/zip-files.ts';
import { makeClip, probeJson, startMediaServer, startService, type MediaServer, type ServiceFixture } from './harness.ts';

const run = promisify(execFile);
const FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf';

describe('the commands real clients send', () => {
  let media: MediaServer;
  let svc: ServiceFixture;

  before(async () => {
    media = await startMediaServer(async (dir) => {
      await makeClip(dir, 'video.mp4', 2);
      await makeClip(dir, 'part2.mp4', 1);
      await writeFile(join(dir, 'captions.srt'), '1\n00:00:00,000 --> 00:00:01,500\nHello from the captions\n');
      await copyFile(FONT, join(dir, 'brand.ttf'));
      await run('ffmpeg', [
        '-hide_banner',
        '-loglevel',
        'error',
        '-f',
        'lavfi',
        '-i',
        'color=c=red:s=64x32',
        '-frames:v',
        '1',
        join(dir, 'logo.png'),
      ]);
      // A zip as a Rendi user builds it: the video, an ASS script naming a font family, the font.
      const zipSrc = join(dir, 'src');
      await mkdir(join(zipSrc, 'fonts'), { recursive: true });
      await makeClip(zipSrc, 'video.mp4', 2);
      await makeClip(zipSrc, 'b.mp4', 1);
      await copyFile(FONT, join(zipSrc, 'fonts', 'brand.ttf'));
      await writeFile(
        join(zipSrc, 'subs.ass'),
        [
          '[Script Info]',
          'ScriptType: v4.00+',
          'PlayResX: 320',
          'PlayResY: 240',
          '',
          '[V4+ Styles]',
          'Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, ' +
            'StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding',
          'Style: Default,DejaVu Sans,24,&H00FFFFFF,&H000000FF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,1,0,2,10,10,10,1',
          '',
          '[Events]',
          'Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text',
          'Dialogue: 0,0:00:00.00,0:00:01.50,Default,,0,0,0,,Karaoke line',
          '',
        ].join('\n'),
      );
      await writeFile(join(zipSrc, 'list.txt'), "file 'video.mp4'\nfile 'b.mp4'\n");
      // Names as people give them: spaces and parentheses.
      await copyFile(join(zipSrc, 'subs.ass'), join(zipSrc, 'My Subs (FR).ass'));
      await zipFiles(
        zipSrc,
        ['video.mp4', 'b.mp4', 'subs.ass', 'My Subs (FR).ass', 'fonts/brand.ttf', 'list.txt'],
        join(dir, 'project.zip'),
      );
    });
    svc = await startService({ allow: [media.allowEntry] });
  });

  after(async () => {
    await svc?.close();
    await media?.close();
  });

  async function runToSuccess(body: Record<string, unknown>) {
    const api = svc.client();
    const res = await api.post('/v1/run-ffmpeg-command', body);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const { record } = await api.waitForEnd(res.body.command_id, 120_000);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    return record;
  }

  test("burning subtitles, Rendi's documented example: subtitles={{in_srt}}", async () => {
    const record = await runToSuccess({
      ffmpeg_command: '-i {{in_1}} -vf subtitles={{in_srt}} -c:a copy {{out_1}}',
      input_files: { in_1: `${media.url}/video.mp4`, in_srt: `${media.url}/captions.srt` },
      output_files: { out_1: 'captioned.mp4' },
    });
    assert.equal(record.output_files.out_1.width, 320);
    assert.ok(Math.abs(record.output_files.out_1.duration - 2) < 0.2);
  });

  test('ASS subtitles with fonts from the zip input (fontsdir)', async () => {
    const record = await runToSuccess({
      ffmpeg_command: '-i video.mp4 -vf subtitles=subs.ass:fontsdir=fonts {{out_1}}',
      input_compressed_folder: `${media.url}/project.zip`,
      output_files: { out_1: 'karaoke.mp4' },
    });
    assert.equal(record.output_files.out_1.codec, 'h264');
  });

  test('a subtitles file from the zip whose name has spaces and parentheses', async () => {
    const record = await runToSuccess({
      ffmpeg_command: `-i video.mp4 -vf "subtitles='My Subs (FR).ass':fontsdir=fonts" {{out_1}}`,
      input_compressed_folder: `${media.url}/project.zip`,
      output_files: { out_1: 'french.mp4' },
    });
    assert.equal(record.output_files.out_1.codec, 'h264');
  });

  test('drawtext with a font input and escaped text inside -filter_complex', async () => {
    const record = await runToSuccess({
      ffmpeg_command:
        '-i {{in_1}} -filter_complex "[0:v]drawtext=fontfile={{in_font}}:text=\'LEVEL\\: 3\':fontsize=42:x=10:y=10[v]" ' +
        '-map [v] -map 0:a {{out_1}}',
      input_files: { in_1: `${media.url}/video.mp4`, in_font: `${media.url}/brand.ttf` },
      output_files: { out_1: 'level.mp4' },
    });
    assert.equal(record.output_files.out_1.height, 240);
  });

  test('a font attached to MKV', async () => {
    const record = await runToSuccess({
      ffmpeg_command: '-i {{in_1}} -attach {{in_font}} -metadata:s:t mimetype=font/ttf -c copy {{out_1}}',
      input_files: { in_1: `${media.url}/video.mp4`, in_font: `${media.url}/brand.ttf` },
      output_files: { out_1: 'with-font.mkv' },
    });
    const probe = await probeJson(record.output_files.out_1.storage_url);
    const attachment = probe.streams.find((s: any) => s.codec_type === 'attachment');
    assert.ok(attachment, JSON.stringify(probe.streams));
    assert.equal(attachment.tags.mimetype, 'font/ttf');
  });

  test('an image overlaid through movie= of an input', async () => {
    const record = await runToSuccess({
      ffmpeg_command: '-i {{in_1}} -filter_complex "movie={{in_logo}}[logo];[0:v][logo]overlay=10:10[v]" -map [v] {{out_1}}',
      input_files: { in_1: `${media.url}/video.mp4`, in_logo: `${media.url}/logo.png` },
      output_files: { out_1: 'branded.mp4' },
    });
    assert.equal(record.output_files.out_1.width, 320);
  });

  test('concatenation through a list file inside a zip', async () => {
    const record = await runToSuccess({
      ffmpeg_command: '-f concat -i list.txt -c copy {{out_1}}',
      input_compressed_folder: `${media.url}/project.zip`,
      output_files: { out_1: 'joined.mp4' },
    });
    assert.ok(Math.abs(record.output_files.out_1.duration - 3) < 0.3, String(record.output_files.out_1.duration));
  });
});
