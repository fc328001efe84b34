// Attack: what system fonts and the tee muxer open up. A tee slave names a file and options of its
// own, so every slave must write an output placeholder (or a relative name with OUTPUT_FOLDER) and set
// no option that names a file or a protocol; a font may be named from the root, but only inside the
// font folders, written plainly. Each attempt is a 422 at submit that names what was refused, and
// stores nothing; the account's list stays empty.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { makeClip, startMediaServer, startService, type ApiClient, type MediaServer, type ServiceFixture } from '../harness.ts';
import { outcome, runCommand } from './security-fixture.ts';

const DEJAVU = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf';

describe('security: tee slaves and font paths stay inside what the command may touch', () => {
  let media: MediaServer;
  let svc: ServiceFixture;
  let attacker: ApiClient;

  before(async () => {
    media = await startMediaServer((dir) => makeClip(dir, 'video.mp4', 1));
    svc = await startService({ allow: [media.allowEntry] });
    attacker = svc.client(await svc.newAccount('pro'));
  });
  after(async () => {
    await svc?.close();
    await media?.close();
  });

  const placeholders = (command: string) => ({
    ffmpeg_command: command,
    input_files: { in_1: `${media.url}/video.mp4` },
    output_files: { out_1: 'a.mp4', out_2: 'b.mkv' },
  });
  const folder = (command: string) => ({
    ffmpeg_command: command,
    input_files: { in_1: `${media.url}/video.mp4` },
    output_files: 'OUTPUT_FOLDER',
  });
  // [what, request body, a fragment of the 422's message]
  const attacks: [string, (url: string) => Record<string, unknown>, string][] = [
    ['a tee slave naming an absolute path', () => placeholders('-i {{in_1}} -f tee "[f=mp4]{{out_1}}|[f=mp4]/tmp/stolen.mp4"'), 'slave 2'],
    ['a tee slave naming an absolute path (OUTPUT_FOLDER)', () => folder('-i {{in_1}} -f tee "a.mp4|/tmp/stolen.mp4"'), 'absolute paths'],
    ['a tee slave leaving the folder with ../', () => folder('-i {{in_1}} -f tee "a.mp4|[f=mp4]../../stolen.mp4"'), '".." is not allowed'],
    ['a tee slave writing to tcp://', () => folder('-i {{in_1}} -f tee "a.mp4|[f=mpegts]tcp://127.0.0.1:9/x"'), 'protocols'],
    ['a tee slave writing to file:', () => folder('-i {{in_1}} -f tee "a.mp4|file:/tmp/stolen.mp4"'), 'protocols'],
    ['a tee slave writing to file: behind quotes', () => folder(`-i {{in_1}} -f tee "a.mp4|'file:b.mp4'"`), 'protocols'],
    ['a tee slave writing to file: behind escapes', () => folder(String.raw`-i {{in_1}} -f tee "a.mp4|fi\\le\\:b.mp4"`), 'protocols'],
    [
      'a tee slave naming a file through a muxer option',
      () => folder('-i {{in_1}} -f tee "[f=mp4:hls_segment_filename=/tmp/x]a.mp4"'),
      'not allowed',
    ],
    [
      'a tee slave opening protocols through an option',
      () => folder('-i {{in_1}} -f tee "[protocol_whitelist=tcp,file]a.mp4"'),
      'not allowed',
    ],
    ['a tee slave wrapped in the fifo muxer', () => folder('-i {{in_1}} -f tee "[use_fifo=1:fifo_options=x]a.mp4"'), 'fifo'],
    ['a tee inside a tee', () => folder('-i {{in_1}} -f tee "[f=tee]a.mp4"'), 'option "f"'],
    ['a tee slave writing an input', () => placeholders('-i {{in_1}} -f tee "[f=mp4]{{out_1}}|[f=mp4]{{in_1}}"'), 'is an input file'],
    [
      'a font file leaving the font folder with ..',
      () => placeholders(`-i {{in_1}} -vf "drawtext=fontfile=/usr/share/fonts/../../etc/passwd:text=x" {{out_1}}`),
      '"." and ".."',
    ],
    [
      'a font file escaped past the folder',
      () => placeholders(String.raw`-i {{in_1}} -vf "drawtext=fontfile=/usr/share/fonts/\.\./\.\./etc/passwd:text=x" {{out_1}}`),
      '"." and ".."',
    ],
    [
      'a font file through /proc/self',
      () => placeholders(`-i {{in_1}} -vf "drawtext=fontfile=/proc/self/root${DEJAVU}:text=x" {{out_1}}`),
      'outside the font folders',
    ],
    [
      'a font file in /proc/self/environ',
      () => placeholders('-i {{in_1}} -vf "drawtext=fontfile=/proc/self/environ:text=x" {{out_1}}'),
      'outside the font folders',
    ],
    ['a font file without a key', () => placeholders('-i {{in_1}} -vf "drawtext=/etc/shadow:x" {{out_1}}'), 'option "fontfile"'],
    [
      'a font folder next to the font folder',
      () => placeholders('-i {{in_1}} -vf "subtitles=x.srt:fontsdir=/usr/share/fonts-evil" {{out_1}}'),
      'outside the font folders',
    ],
    [
      'a font folder through /proc',
      () => placeholders('-i {{in_1}} -vf "subtitles=x.srt:fontsdir=/proc/1/root/etc" {{out_1}}'),
      'outside the font folders',
    ],
    [
      'a text file from the font folder (textfile is no font)',
      () => placeholders(`-i {{in_1}} -vf "drawtext=textfile=${DEJAVU}" {{out_1}}`),
      'option "textfile"',
    ],
    [
      'a font attached from outside the folder',
      () => placeholders('-i {{in_1}} -attach /usr/share/fonts/../../../etc/passwd {{out_1}}'),
      '"." and ".."',
    ],
    [
      'a font pattern naming a file',
      () => placeholders(`-i {{in_1}} -vf "drawtext=font='Sans\\:file=/etc/passwd':text=x" {{out_1}}`),
      'font family name',
    ],
  ];

  for (const [what, body, fragment] of attacks) {
    test(`attack: ${what} is a 422 naming it`, async () => {
      const res = await attacker.post('/v1/run-ffmpeg-command', body(media.url));
      assert.equal(res.status, 422, JSON.stringify(res.body));
      const message = res.body.detail[0].msg as string;
      assert.ok(message.includes(fragment), message);
    });
  }

  test('nothing of the refused commands was stored', async () => {
    const list = await attacker.get('/v1/commands');
    assert.equal(list.status, 200);
    assert.deepEqual(list.body, []);
  });

  test('control: the same shapes, written inside the rules, run', async () => {
    const record = await runCommand(attacker, {
      ffmpeg_command: `-i {{in_1}} -vf "drawtext=fontfile=${DEJAVU}:text=ok" -map 0 -c:v libx264 -preset ultrafast -c:a aac -flags +global_header -f tee "[f=mp4]{{out_1}}|[f=matroska]{{out_2}}"`,
      input_files: { in_1: `${media.url}/video.mp4` },
      output_files: { out_1: 'a.mp4', out_2: 'b.mkv' },
    });
    assert.equal(outcome(record), 'SUCCESS', JSON.stringify(record));
  });
});
