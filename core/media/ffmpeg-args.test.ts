import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFfmpegCommand } from '../command-line/parse.ts';
import type { ParsedCommand } from '../command-line/parsed-command.ts';
import { buildFfmpegArgv, DEFAULT_MAX_PIXELS } from './ffmpeg-args.ts';

function command(parts: Partial<ParsedCommand>): ParsedCommand {
  return { globals: [], inputs: [], outputs: [], inputAliases: [], outputAliases: [], ...parts };
}

const resolveAlias = (alias: string): string => `/work/${alias}.bin`;

/** Runs ffmpeg; resolves with its exit code and stderr (never rejects on a non-zero exit). */
function ffmpeg(cwd: string, argv: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile('ffmpeg', argv, { cwd }, (err, _stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stderr });
    });
  });
}

describe('buildFfmpegArgv', () => {
  test('places service options around the user options', () => {
    const argv = buildFfmpegArgv(
      command({
        globals: ['-loglevel', 'info'],
        inputs: [{ options: ['-ss', '2'], target: { alias: 'in_1' } }],
        outputs: [{ options: ['-c:v', 'libx264', '-vf', 'scale=100:-2'], target: { alias: 'out_1' } }],
        inputAliases: ['in_1'],
        outputAliases: ['out_1'],
      }),
      resolveAlias,
      { threads: 2 },
    );
    assert.deepEqual(argv, [
      '-loglevel',
      'info',
      '-hide_banner',
      '-nostdin',
      '-y',
      '-nostats',
      '-progress',
      'pipe:1',
      '-filter_threads',
      '2',
      '-filter_complex_threads',
      '2',
      '-ss',
      '2',
      '-protocol_whitelist',
      'file,pipe',
      '-max_pixels',
      String(DEFAULT_MAX_PIXELS),
      '-threads',
      '2',
      '-i',
      '/work/in_1.bin',
      '-c:v',
      'libx264',
      '-vf',
      'scale=100:-2',
      '-protocol_whitelist',
      'file',
      '-threads',
      '2',
      '/work/out_1.bin',
    ]);
  });

  test('adds -safe 1 only to a concat input, and resolves placeholders inside options', () => {
    const argv = buildFfmpegArgv(
      command({
        inputs: [
          { options: ['-f', 'concat'], target: { alias: 'list' } },
          { options: [], target: 'local.mp4' },
        ],
        outputs: [{ options: ['-attach', { alias: 'font' }], target: 'out.mkv' }],
      }),
      resolveAlias,
      { threads: 1, maxPixels: 1000 },
    );
    assert.deepEqual(argv.slice(argv.indexOf('-f')), [
      '-f',
      'concat',
      '-protocol_whitelist',
      'file,pipe',
      '-safe',
      '1',
      '-max_pixels',
      '1000',
      '-threads',
      '1',
      '-i',
      '/work/list.bin',
      '-protocol_whitelist',
      'file,pipe',
      '-max_pixels',
      '1000',
      '-threads',
      '1',
      '-i',
      'local.mp4',
      '-attach',
      '/work/font.bin',
      '-protocol_whitelist',
      'file',
      '-threads',
      '1',
      'out.mkv',
    ]);
  });

  test('escapes a placeholder inside an argument for where it stands', () => {
    const argv = buildFfmpegArgv(
      command({
        inputs: [{ options: [], target: { alias: 'in_1' } }],
        outputs: [
          {
            options: [
              '-vf',
              { template: ['subtitles=', { alias: 'in_srt', levels: ['bare', 'bare'] }, ":force_style='Fontsize=24'"] },
              '-metadata',
              { template: ['comment=', { alias: 'in_srt', levels: [] }] },
            ],
            target: 'o.mp4',
          },
        ],
      }),
      (alias) => `.in/${alias}/a, b's.srt`,
      { threads: 1 },
    );
    assert.ok(argv.includes(String.raw`subtitles=\\.in/in_srt/a\\\,\\\ b\\\'s.srt:force_style='Fontsize=24'`), argv.join(' '));
    assert.ok(argv.includes(`comment=.in/in_srt/a, b's.srt`));
  });

  test("drops the user's -n and -y: the service's -y would contradict -n", () => {
    const argv = buildFfmpegArgv(
      command({ globals: ['-n', '-loglevel', 'info', '-y'], outputs: [{ options: [], target: 'o.mp4' }] }),
      resolveAlias,
      { threads: 1 },
    );
    assert.equal(argv.filter((a) => a === '-n').length, 0);
    assert.equal(argv.filter((a) => a === '-y').length, 1);
    assert.deepEqual(argv.slice(0, 2), ['-loglevel', 'info']);
  });

  test('refuses targets that ffmpeg would read as options, and bad numbers', () => {
    const withOutput = (target: string): ParsedCommand =>
      command({ inputs: [{ options: [], target: 'a.mp4' }], outputs: [{ options: [], target }] });
    assert.throws(() => buildFfmpegArgv(withOutput('-report'), resolveAlias, { threads: 1 }), /invalid ffmpeg input or output/);
    const aliasInput = command({ inputs: [{ options: [], target: { alias: 'a' } }] });
    assert.throws(() => buildFfmpegArgv(aliasInput, () => '-x', { threads: 1 }), /invalid ffmpeg input or output: "-x"/);
    assert.throws(() => buildFfmpegArgv(withOutput(''), resolveAlias, { threads: 1 }), /invalid/);
    assert.throws(() => buildFfmpegArgv(withOutput('o.mp4'), resolveAlias, { threads: 0 }), /threads must be a positive integer/);
    assert.throws(() => buildFfmpegArgv(withOutput('o.mp4'), resolveAlias, { threads: 2, maxPixels: 1.5 }), /maxPixels/);
    assert.equal(buildFfmpegArgv(withOutput('-'), resolveAlias, { threads: 1 }).at(-1), '-');
  });
});

describe('the built argv with the real ffmpeg', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ffmpeg-args-test-'));
    const make = await ffmpeg(dir, [
      '-hide_banner',
      '-loglevel',
      'error',
      '-f',
      'lavfi',
      '-i',
      'testsrc=duration=1:size=320x240:rate=25',
      '-pix_fmt',
      'yuv420p',
      'in.mp4',
    ]);
    assert.equal(make.code, 0, make.stderr);
    await writeFile(join(dir, 'list.txt'), "file 'in.mp4'\nfile 'in.mp4'\n");
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const resolveInDir = (alias: string): string => join(dir, alias);

  test('a probed ffconcat list cannot turn -safe off', async () => {
    await writeFile(join(dir, 'absolute.ffconcat'), `ffconcat version 1.0\nfile '${join(dir, 'in.mp4')}'\n`);
    const cmd = command({
      inputs: [{ options: ['-safe', '0'], target: 'absolute.ffconcat' }],
      outputs: [{ options: ['-f', 'null'], target: '-' }],
    });
    const run = await ffmpeg(dir, buildFfmpegArgv(cmd, resolveInDir, { threads: 1 }));
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /Unsafe file name/);
  });

  test('every service option is accepted in its position (concat, filters, encoder)', async () => {
    const argv = buildFfmpegArgv(
      command({
        globals: ['-filter_complex', '[0:v][1:v]concat=n=2:v=1:a=0[v]'],
        inputs: [
          { options: ['-f', 'concat'], target: { alias: 'list.txt' } },
          { options: ['-threads', '8'], target: { alias: 'in.mp4' } },
        ],
        outputs: [{ options: ['-map', '[v]', '-c:v', 'libx264', '-threads', '8'], target: { alias: 'out.mp4' } }],
      }),
      resolveInDir,
      { threads: 2 },
    );
    const run = await ffmpeg(dir, argv);
    assert.equal(run.code, 0, run.stderr);
    assert.ok((await stat(join(dir, 'out.mp4'))).size > 0);
  });

  test('paths with quotes, backslashes, colons, commas and brackets reach the filters exactly', async () => {
    const names = { in_srt: String.raw`.in/in_srt/it's: [a], b; c=\d.srt`, in_txt: String.raw`.in/in_txt/'quoted' \ text.txt` };
    await mkdir(join(dir, '.in/in_srt'), { recursive: true });
    await mkdir(join(dir, '.in/in_txt'), { recursive: true });
    await writeFile(join(dir, names.in_srt), '1\n00:00:00,000 --> 00:00:00,500\nHi\n');
    await writeFile(join(dir, names.in_txt), 'hello');
    const parsed = parseFfmpegCommand(
      '-i {{in_1}} -vf "subtitles={{in_srt}},drawtext=textfile=\'{{in_txt}}\':x=1" -attach {{in_txt}} ' +
        '-metadata:s:t mimetype=text/plain -c:v libx264 -an {{out_1}}',
      { inputAliases: new Set(['in_1', 'in_srt', 'in_txt']), outputAliases: new Set(['out_1']) },
    );
    const files: Record<string, string> = { ...names, in_1: 'in.mp4', out_1: 'escaped.mkv' };
    const run = await ffmpeg(dir, ['-v', 'repeat+debug', ...buildFfmpegArgv(parsed, (alias) => files[alias], { threads: 1 })]);
    assert.equal(run.code, 0, run.stderr.slice(-3000));
    assert.ok(run.stderr.includes(`Setting 'filename' to value '${names.in_srt}'`), 'subtitles read the path exactly');
    assert.ok(run.stderr.includes(`Setting 'textfile' to value '${names.in_txt}'`), 'drawtext read the path exactly');
    assert.ok((await stat(join(dir, 'escaped.mkv'))).size > 0);
  });

  test('-max_pixels stops a decoder from allocating a larger picture', async () => {
    const cmd = command({ inputs: [{ options: [], target: 'in.mp4' }], outputs: [{ options: ['-f', 'null'], target: '-' }] });
    const allowed = await ffmpeg(dir, buildFfmpegArgv(cmd, resolveInDir, { threads: 1 }));
    assert.equal(allowed.code, 0, allowed.stderr);
    const refused = await ffmpeg(dir, buildFfmpegArgv(cmd, resolveInDir, { threads: 1, maxPixels: 320 * 240 - 1 }));
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /exceeds specified max pixel count/);
  });

  test('a user -protocol_whitelist is overridden: no network input, no pipe output', async () => {
    let requests = 0;
    const server = createServer((_req, res) => {
      requests++;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const input = command({
        inputs: [{ options: ['-protocol_whitelist', 'http,tcp,file'], target: `http://127.0.0.1:${port}/in.mp4` }],
        outputs: [{ options: ['-f', 'null'], target: '-' }],
      });
      const fetched = await ffmpeg(dir, buildFfmpegArgv(input, resolveInDir, { threads: 1 }));
      assert.notEqual(fetched.code, 0);
      assert.match(fetched.stderr, /Protocol 'http' not on whitelist 'file,pipe'/);
      assert.equal(requests, 0);

      const output = command({
        inputs: [{ options: [], target: 'in.mp4' }],
        outputs: [{ options: ['-protocol_whitelist', 'pipe,file', '-f', 'mp4'], target: '-' }],
      });
      const piped = await ffmpeg(dir, buildFfmpegArgv(output, resolveInDir, { threads: 1 }));
      assert.notEqual(piped.code, 0);
      assert.match(piped.stderr, /Protocol 'pipe' not on whitelist 'file'/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
