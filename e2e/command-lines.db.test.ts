// Real command lines, as clients written for Rendi send them, each through the public API to its end:
// what ffmpeg itself refuses (an unknown filter, a drawtext whose quotes do not pair, an unknown option)
// is accepted and ends FAILED with ffmpeg's own message, at once and without a download; system fonts
// by path, tee, palettegen, select thumbnails, xfade with acrossfade, a still image with audio,
// loudnorm with a timeline-enabled volume, segments, image sequences and HLS into OUTPUT_FOLDER end
// SUCCESS, their outputs probed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { makeClip, probeJson, startMediaServer, startService, type ApiClient, type MediaServer, type ServiceFixture } from './harness.ts';

const run = promisify(execFile);
const FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf';

interface Case {
  name: string;
  body: (url: string) => Record<string, unknown>;
  path?: string;
  status: 'SUCCESS' | 'FAILED';
  /** FAILED: the start of error_message (ffmpeg's own words). */
  cause?: string;
  /** FAILED at submit: the command never ran, so nothing was downloaded. */
  endedAtSubmit?: boolean;
  /** SUCCESS: checks on the record and its probed outputs. */
  check?: (record: any) => Promise<void> | void;
}

const near = (actual: number, expected: number, tolerance: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual}, expected about ${expected}`);

const CASES: Case[] = [
  {
    name: 'an unknown filter (Pipedream turns the FAILED message into its own error)',
    body: (url) => ({
      ffmpeg_command: '-i {{in_1}} -vf nosuchfilter {{out_1}}',
      input_files: { in_1: `${url}/submit-only-1.mp4` },
      output_files: { out_1: 'out.mp4' },
    }),
    status: 'FAILED',
    cause: "No such filter: 'nosuchfilter'",
    endedAtSubmit: true,
  },
  {
    name: "a client's drawtext whose quotes do not pair: the comma of gte(t,1) ends the filter",
    body: (url) => ({
      ffmpeg_command: `-i {{in_1}} -vf "drawtext=text='it's':fontsize=24:enable='gte(t,1)'" {{out_1}}`,
      input_files: { in_1: `${url}/submit-only-2.mp4` },
      output_files: { out_1: 'out.mp4' },
    }),
    status: 'FAILED',
    cause: "Error when evaluating the expression 'gte(t' for enable",
    endedAtSubmit: true,
  },
  {
    name: 'an option ffmpeg does not know',
    body: (url) => ({
      ffmpeg_command: '-i {{in_1}} -presets fast {{out_1}}',
      input_files: { in_1: `${url}/submit-only-3.mp4` },
      output_files: { out_1: 'out.mp4' },
    }),
    status: 'FAILED',
    cause: "Unrecognized option 'presets'.",
    endedAtSubmit: true,
  },
  {
    name: 'a chain whose second command names an unknown muxer: no command runs',
    path: '/v1/run-chained-ffmpeg-commands',
    body: (url) => ({
      ffmpeg_commands: ['-i {{in_1}} -t 1 {{out_1}}', '-i {{out_1}} -f nosuchmux {{out_2}}'],
      input_files: { in_1: `${url}/submit-only-4.mp4` },
      output_files: { out_1: 'a.mp4', out_2: 'b.mp4' },
    }),
    status: 'FAILED',
    cause: "Requested output format 'nosuchmux' is not a suitable output format\n--\nffmpeg stops here (command 2 of the chain)",
    endedAtSubmit: true,
  },
  {
    name: 'an encoder ffmpeg does not have: ffmpeg runs and says so',
    body: (url) => ({
      ffmpeg_command: '-i {{in_1}} -c:v nosuchencoder {{out_1}}',
      input_files: { in_1: `${url}/video.mp4` },
      output_files: { out_1: 'out.mp4' },
    }),
    status: 'FAILED',
    cause: 'ffmpeg exited with code',
  },
  {
    name: "a system font by its path (a public client's addTextOverlays)",
    body: (url) => ({
      ffmpeg_command: `-i {{in_1}} -vf "drawtext=fontfile=${FONT}:text='Hello':fontsize=32:x=10:y=10" -c:a copy {{out_1}}`,
      input_files: { in_1: `${url}/video.mp4` },
      output_files: { out_1: 'overlay.mp4' },
    }),
    status: 'SUCCESS',
    check: (r) => assert.equal(r.output_files.out_1.width, 320),
  },
  {
    name: 'a font family through fontconfig, and subtitles with fontsdir on the font folder',
    body: (url) => ({
      ffmpeg_command: `-i {{in_1}} -vf "subtitles={{in_srt}}:fontsdir=/usr/share/fonts:force_style='FontName=DejaVu Sans',drawtext=font='DejaVu Sans':text=x" {{out_1}}`,
      input_files: { in_1: `${url}/video.mp4`, in_srt: `${url}/captions.srt` },
      output_files: { out_1: 'captioned.mp4' },
    }),
    status: 'SUCCESS',
    check: (r) => near(r.output_files.out_1.duration, 2, 0.2, 'duration'),
  },
  {
    // Matroska needs the encoders' global headers, or tee drops that slave (ffmpeg's own behaviour).
    name: "tee, Rendi's dynamic-file pattern: one encode, an MP4 and a Matroska file",
    body: (url) => ({
      ffmpeg_command:
        '-i {{in_1}} -map 0 -c:v libx264 -preset ultrafast -c:a aac -flags +global_header -f tee "[f=mp4]{{out_1}}|[f=matroska]{{out_2}}"',
      input_files: { in_1: `${url}/video.mp4` },
      output_files: { out_1: 'both.mp4', out_2: 'both.mkv' },
    }),
    status: 'SUCCESS',
    check: async (r) => {
      for (const alias of ['out_1', 'out_2']) {
        const probe = await probeJson(r.output_files[alias].storage_url);
        assert.deepEqual(probe.streams.map((s: any) => s.codec_type).sort(), ['audio', 'video'], alias);
      }
      assert.match((await probeJson(r.output_files.out_2.storage_url)).format.format_name, /matroska/);
    },
  },
  {
    name: 'tee copying streams, with per-slave stream selection and muxer options',
    body: (url) => ({
      ffmpeg_command: '-i {{in_1}} -map 0 -c copy -f tee "[f=mp4:movflags=+faststart]{{out_1}}|[f=mp4:select=a]{{out_2}}"',
      input_files: { in_1: `${url}/video.mp4` },
      output_files: { out_1: 'copy.mp4', out_2: 'audio.m4a' },
    }),
    status: 'SUCCESS',
    check: async (r) => {
      const audio = await probeJson(r.output_files.out_2.storage_url);
      assert.deepEqual(
        audio.streams.map((s: any) => s.codec_type),
        ['audio'],
      );
    },
  },
  {
    name: 'a GIF through palettegen and paletteuse',
    body: (url) => ({
      ffmpeg_command:
        '-i {{in_1}} -filter_complex "[0:v]fps=10,scale=160:-1:flags=lanczos,split[a][b];[a]palettegen[p];[b][p]paletteuse" {{out_1}}',
      input_files: { in_1: `${url}/video.mp4` },
      output_files: { out_1: 'anim.gif' },
    }),
    status: 'SUCCESS',
    check: (r) => {
      assert.equal(r.output_files.out_1.codec, 'gif');
      assert.equal(r.output_files.out_1.width, 160);
    },
  },
  {
    name: 'a thumbnail of frame 10 with select=eq(n\\,10)',
    body: (url) => ({
      ffmpeg_command: String.raw`-i {{in_1}} -vf "select=eq(n\,10)" -vframes 1 {{out_1}}`,
      input_files: { in_1: `${url}/video.mp4` },
      output_files: { out_1: 'thumb.png' },
    }),
    status: 'SUCCESS',
    check: (r) => {
      assert.equal(r.output_files.out_1.codec, 'png');
      assert.equal(r.output_files.out_1.height, 240);
    },
  },
  {
    name: 'xfade with acrossfade',
    body: (url) => ({
      ffmpeg_command:
        '-i {{in_1}} -i {{in_2}} -filter_complex ' +
        '"[0:v][1:v]xfade=transition=fade:duration=0.5:offset=1.5[v];[0:a][1:a]acrossfade=d=0.5[a]" ' +
        '-map "[v]" -map "[a]" -c:v libx264 -preset ultrafast {{out_1}}',
      input_files: { in_1: `${url}/video.mp4`, in_2: `${url}/part2.mp4` },
      output_files: { out_1: 'xfade.mp4' },
    }),
    status: 'SUCCESS',
    check: (r) => near(r.output_files.out_1.duration, 2.5, 0.2, 'duration'),
  },
  {
    name: 'a still image with audio',
    body: (url) => ({
      ffmpeg_command:
        '-loop 1 -i {{in_img}} -i {{in_audio}} -c:v libx264 -preset ultrafast -tune stillimage -c:a aac -pix_fmt yuv420p -shortest {{out_1}}',
      input_files: { in_img: `${url}/cover.png`, in_audio: `${url}/tone.m4a` },
      output_files: { out_1: 'still.mp4' },
    }),
    status: 'SUCCESS',
    check: (r) => {
      near(r.output_files.out_1.duration, 2, 0.3, 'duration');
      assert.equal(r.output_files.out_1.width, 64);
    },
  },
  {
    name: 'loudnorm, then a volume enabled on part of the timeline',
    body: (url) => ({
      ffmpeg_command: `-i {{in_1}} -af "loudnorm=I=-16:TP=-1.5:LRA=11,volume=0.5:enable='between(t,0.5,1)'" -ar 48000 -c:v copy {{out_1}}`,
      input_files: { in_1: `${url}/video.mp4` },
      output_files: { out_1: 'loud.mp4' },
    }),
    status: 'SUCCESS',
    check: async (r) => {
      const probe = await probeJson(r.output_files.out_1.storage_url);
      assert.equal(probe.streams.find((s: any) => s.codec_type === 'audio').sample_rate, '48000');
    },
  },
  {
    name: 'segments into OUTPUT_FOLDER',
    body: (url) => ({
      ffmpeg_command:
        '-i {{in_1}} -c:v libx264 -preset ultrafast -g 25 -c:a copy -map 0 -f segment -segment_time 1 -reset_timestamps 1 part_%03d.mp4',
      input_files: { in_1: `${url}/video.mp4` },
      output_files: 'OUTPUT_FOLDER',
    }),
    status: 'SUCCESS',
    check: (r) => assert.ok(r.output_files.OUTPUT_FOLDER.file_count >= 2, JSON.stringify(r.output_files)),
  },
  {
    name: 'an image sequence (image2 pattern) into OUTPUT_FOLDER',
    body: (url) => ({
      ffmpeg_command: '-i {{in_1}} -vf fps=2 frame_%02d.png',
      input_files: { in_1: `${url}/video.mp4` },
      output_files: 'OUTPUT_FOLDER',
    }),
    status: 'SUCCESS',
    check: (r) => assert.equal(r.output_files.OUTPUT_FOLDER.file_count, 4, JSON.stringify(r.output_files)),
  },
  {
    name: 'HLS into OUTPUT_FOLDER',
    body: (url) => ({
      ffmpeg_command: '-i {{in_1}} -c copy -f hls -hls_time 1 -hls_playlist_type vod stream.m3u8',
      input_files: { in_1: `${url}/video.mp4` },
      output_files: 'OUTPUT_FOLDER',
    }),
    status: 'SUCCESS',
    check: (r) => assert.ok(r.output_files.OUTPUT_FOLDER.file_count >= 2, JSON.stringify(r.output_files)),
  },
  {
    name: 'tee slaves writing relative names into OUTPUT_FOLDER',
    body: (url) => ({
      ffmpeg_command: '-i {{in_1}} -map 0 -c copy -f tee "[f=mp4]a.mp4|[f=mp4:select=v]video only.mp4"',
      input_files: { in_1: `${url}/video.mp4` },
      output_files: 'OUTPUT_FOLDER',
    }),
    status: 'SUCCESS',
    check: (r) => assert.equal(r.output_files.OUTPUT_FOLDER.file_count, 2, JSON.stringify(r.output_files)),
  },
];

/**
 * Polls every command, one request at a time, a quarter of a second between rounds, until all have
 * ended; each one's record and the statuses seen.
 */
async function waitForAll(api: ApiClient, ids: string[], timeoutMs: number): Promise<Map<string, { record: any; seen: string[] }>> {
  const seen = new Map(ids.map((id) => [id, [] as string[]]));
  const ended = new Map<string, { record: any; seen: string[] }>();
  const deadline = Date.now() + timeoutMs;
  while (ended.size < ids.length) {
    for (const id of ids.filter((i) => !ended.has(i))) {
      const res = await api.get(`/v1/commands/${id}`); // (the client waits out a 429 as Retry-After asks)
      if (res.status !== 200) throw new Error(`poll answered ${res.status}: ${JSON.stringify(res.body)}`);
      const label = res.body.processing_stage ? `${res.body.status}/${res.body.processing_stage}` : res.body.status;
      const labels = seen.get(id)!;
      if (labels.at(-1) !== label) labels.push(label);
      if (res.body.status === 'SUCCESS' || res.body.status === 'FAILED') ended.set(id, { record: res.body, seen: labels });
    }
    if (Date.now() > deadline) throw new Error(`${ids.length - ended.size} commands still running after ${timeoutMs} ms`);
    await sleep(250);
  }
  return ended;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('real command lines end as on Rendi', () => {
  let media: MediaServer;
  let svc: ServiceFixture;
  const outcomes = new Map<string, Promise<{ record: any; seen: string[] }>>();

  before(async () => {
    media = await startMediaServer(async (dir) => {
      await makeClip(dir, 'video.mp4', 2);
      await makeClip(dir, 'part2.mp4', 1);
      await run('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'color=c=blue:s=64x48', '-frames:v', '1', join(dir, 'cover.png')]);
      await run('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'sine=d=2', '-c:a', 'aac', join(dir, 'tone.m4a')]);
      await writeFile(join(dir, 'captions.srt'), '1\n00:00:00,000 --> 00:00:01,500\nHello from the captions\n');
    });
    svc = await startService({ allow: [media.allowEntry] });
    const api = svc.client();
    // All submitted first, then awaited: the machine runs them as its cores allow.
    const ids = new Map<string, string>();
    for (const c of CASES) ids.set(c.name, await api.submit(c.body(media.url), c.path));
    const ended = waitForAll(api, [...ids.values()], 300_000);
    ended.catch(() => {}); // each test reports it
    for (const [name, id] of ids)
      outcomes.set(
        name,
        ended.then((all) => all.get(id)!),
      );
  });

  after(async () => {
    await svc?.close();
    await media?.close();
  });

  for (const c of CASES) {
    test(`${c.name}: ${c.status}`, async () => {
      const { record, seen } = await outcomes.get(c.name)!;
      assert.equal(record.status, c.status, JSON.stringify(record));
      if (c.status === 'FAILED') {
        assert.equal(record.error_status, 'FFMPEG_FAILED', JSON.stringify(record));
        assert.ok(record.error_message.startsWith(c.cause!), `error_message: ${record.error_message}`);
      }
      if (c.endedAtSubmit) {
        // Never seen queued or running, and its input never fetched.
        assert.deepEqual(seen, ['FAILED']);
        const input = Object.values(c.body(media.url).input_files as Record<string, string>)[0];
        assert.ok(!media.requests.includes(new URL(input).pathname), `${input} was downloaded`);
        assert.equal(record.processing_stage, null);
        assert.equal(record.ffmpeg_command_run_seconds, 0);
      }
      await c.check?.(record);
    });
  }
});
