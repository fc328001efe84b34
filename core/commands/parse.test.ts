import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFfmpegCommand } from './parse.ts';
import type { ParseOptions } from './parse.ts';
import { BITSTREAM_FILTERS, INPUT_FORMATS, OPTION_TABLE, OUTPUT_FORMATS } from './option-table.ts';
import type { OptionSpec } from './option-table.ts';
import { CommandRejected } from './parsed-command.ts';
import type { Arg, ParsedCommand } from './parsed-command.ts';

const run = promisify(execFile);

const single: ParseOptions = {
  inputAliases: new Set(['in_1', 'in_2']),
  outputAliases: new Set(['out_1', 'out_2']),
};
const folder: ParseOptions = { inputAliases: new Set(['in_1', 'in_2']), outputAliases: new Set(), outputFolder: true };
const laterStep: ParseOptions = { ...single, earlierOutputAliases: new Set(['out_1']) };

function rejection(command: string, opts: ParseOptions): string {
  try {
    parseFfmpegCommand(command, opts);
  } catch (error) {
    assert.ok(error instanceof CommandRejected, `${command}: ${String(error)}`);
    return error.message;
  }
  assert.fail(`accepted: ${command}`);
}

describe('parseFfmpegCommand accepts', () => {
  test('a typical command, sorted into globals, inputs and outputs', () => {
    const parsed = parseFfmpegCommand(
      'ffmpeg -y -hide_banner -i {{in_1}} -c:v libx264 -crf 23 -vf "scale=640:-2" {{out_1}}',
      single,
    );
    assert.deepEqual(parsed, {
      globals: ['-y', '-hide_banner'],
      inputs: [{ options: [], target: { alias: 'in_1' } }],
      outputs: [{ options: ['-c:v', 'libx264', '-crf', '23', '-vf', 'scale=640:-2'], target: { alias: 'out_1' } }],
      inputAliases: ['in_1'],
      outputAliases: ['out_1'],
    } satisfies ParsedCommand);
  });

  test('backslash-escaped placeholders from automation platforms', () => {
    const plain = parseFfmpegCommand('-i {{in_1}} {{out_1}}', single);
    assert.deepEqual(parseFfmpegCommand(String.raw`-i \{\{in_1\}\} \{\{out_1\}\}`, single), plain);
    assert.deepEqual(parseFfmpegCommand(String.raw`-i "\{\{in_1\}\}" '\{\{out_1\}\}'`, single), plain);
  });

  test('global options anywhere, per-file options with the file that follows them', () => {
    const parsed = parseFfmpegCommand(
      '-i {{in_1}} -filter_complex "[0:v]split[a][b]" -map [a] {{out_1}} -ss 2 -i {{in_2}} -map [b] {{out_2}} -y',
      single,
    );
    assert.deepEqual(parsed.globals, ['-filter_complex', '[0:v]split[a][b]', '-y']);
    assert.deepEqual(parsed.inputs, [
      { options: [], target: { alias: 'in_1' } },
      { options: ['-ss', '2'], target: { alias: 'in_2' } },
    ]);
    assert.deepEqual(parsed.outputs, [
      { options: ['-map', '[a]'], target: { alias: 'out_1' } },
      { options: ['-map', '[b]'], target: { alias: 'out_2' } },
    ]);
    assert.deepEqual(parsed.inputAliases, ['in_1', 'in_2']);
  });

  test('a lavfi input, whose -i value is a checked filtergraph; -f is normalised', () => {
    const parsed = parseFfmpegCommand('-f:v LAVFI -i "color=c=red:s=320x240:d=1" {{out_1}}', single);
    assert.deepEqual(parsed.inputs, [{ options: ['-f', 'lavfi'], target: 'color=c=red:s=320x240:d=1' }]);
    assert.deepEqual(parsed.inputAliases, []);
  });

  test('an earlier step output as an input of a later chain step', () => {
    const parsed = parseFfmpegCommand('-i {{out_1}} -vf hflip {{out_2}}', laterStep);
    assert.deepEqual(parsed.inputAliases, ['out_1']);
    assert.deepEqual(parsed.outputAliases, ['out_2']);
  });

  test('relative names: inputs always, outputs with OUTPUT_FOLDER', () => {
    const parsed = parseFfmpegCommand(
      '-i media/clip.mp4 -c:v libx264 -f hls -hls_time 4 -hls_list_size 0 -hls_segment_filename "seg_%03d.ts" index.m3u8',
      folder,
    );
    assert.deepEqual(parsed.inputs, [{ options: [], target: 'media/clip.mp4' }]);
    assert.deepEqual(parsed.outputs[0].target, 'index.m3u8');
    assert.ok(parsed.outputs[0].options.includes('seg_%03d.ts'));
  });

  test('a -segment_list placeholder counts as an output alias', () => {
    const parsed = parseFfmpegCommand('-i {{in_1}} -f segment -segment_list {{out_2}} -segment_time 5 {{out_1}}', single);
    assert.deepEqual(parsed.outputAliases, ['out_2', 'out_1']);
    assert.deepEqual(parsed.outputs[0].options.at(3), { alias: 'out_2' } satisfies Arg);
  });

  test('many everyday commands', () => {
    const commands: [string, ParseOptions][] = [
      ['-i {{in_1}} -f null -', single],
      ['-i {{in_1}} -af loudnorm=I=-16:print_format=summary -f null /dev/null', single],
      ['-ss 00:00:05 -t 10 -i {{in_1}} -c copy -avoid_negative_ts make_zero {{out_1}}', single],
      ['-i {{in_1}} -i {{in_2}} -filter_complex "[0:v][1:v]overlay=W-w-10:10" -c:a copy {{out_1}}', single],
      ['-i {{in_1}} -vn -ac 2 -ar 44100 -c:a libmp3lame -b:a 192k -id3v2_version 3 -write_xing 0 {{out_1}}', single],
      ['-i {{in_1}} -map 0:v:0 -map 0:a? -c:v libx265 -x265-params keyint=48:no-open-gop=1 -tag:v hvc1 {{out_1}}', single],
      ['-i {{in_1}} -c:v libx264 -x264-params keyint=48:min-keyint=48:scenecut=0 -movflags +faststart {{out_1}}', single],
      ['-i {{in_1}} -c:v libvpx-vp9 -b:v 0 -crf 31 -deadline good -cpu-used 4 -row-mt 1 {{out_1}}', single],
      ['-i {{in_1}} -metadata title="My clip" -metadata:s:a:0 language=eng -disposition:a:0 default {{out_1}}', single],
      ['-i {{in_1}} -c copy -bsf:v h264_mp4toannexb -f mpegts {{out_1}}', single],
      ['-noautorotate -i {{in_1}} -autoscale 0 -vf "transpose=1" {{out_1}}', single],
      ['-pattern_type glob -framerate 10 -i "frames/*.png" -c:v libx264 {{out_1}}', single],
      ['-framerate 25 -start_number 1 -i img_%04d.jpg -pix_fmt yuv420p {{out_1}}', single],
      ['-stream_loop 2 -i {{in_1}} -shortest -fps_mode cfr -r 30 {{out_1}}', single],
      ['-loop 1 -i {{in_1}} -i {{in_2}} -c:v libx264 -tune stillimage -shortest {{out_1}}', single],
      ['-f concat -i {{in_1}} -c copy {{out_1}}', single],
      ['-i {{in_1}} -ss 1 -frames:v 1 -q:v 2 {{out_1}}', single],
      ['-i {{in_1}} -vf "fps=1/5,scale=320:-1" -vsync vfr frame_%03d.png', folder],
      ['-i {{in_1}} -c copy -f segment -segment_time 10 -segment_list list.m3u8 -reset_timestamps 1 part%03d.ts', folder],
      ['-i {{in_1}} -c copy -f segment -segment_format mp4 -segment_time 10 part%03d.mp4', folder],
      ['-i {{in_1}} -master_pl_name master.m3u8 -var_stream_map "v:0,a:0" -f hls stream_%v.m3u8', folder],
      ['-loglevel error -nostdin -n -i {{in_1}} -threads 2 -preset veryfast -profile:v high -level 4.1 {{out_1}}', single],
      ['-i {{in_1}} {{out_1}}', { ...single, inputAliases: new Set(['in_1', 'in_2', 'in_3']) }],
    ];
    for (const [command, opts] of commands) {
      assert.doesNotThrow(() => parseFfmpegCommand(command, opts), command);
    }
  });
});

describe('parseFfmpegCommand refuses', () => {
  const cases: [string, string, ParseOptions?][] = [
    // file arguments
    ['-i /etc/passwd {{out_1}}', '-i "/etc/passwd": absolute paths are not allowed'],
    ['-i ../secret.mp4 {{out_1}}', '".." is not allowed'],
    ['-i media/../../x.mp4 {{out_1}}', '".." is not allowed'],
    ['-i file:x.mp4 {{out_1}}', 'protocols'],
    ['-i http://example.com/x.mp4 {{out_1}}', 'protocols'],
    ['-i "concat:a.mp4|b.mp4" {{out_1}}', 'protocols'],
    ['-i pipe:0 {{out_1}}', 'pipes are not available'],
    ['-i - {{out_1}}', 'pipes are not available'],
    ['-i ~/x.mp4 {{out_1}}', '"~" is not allowed'],
    ["-i 'a\\\\b.mp4' {{out_1}}", 'backslashes are not allowed'],
    ['-i "a b.mp4" {{out_1}}', 'only letters, digits'],
    ['-i media//x.mp4 {{out_1}}', 'empty folder names'],
    ['-i "frames/*.png" {{out_1}}', 'only letters, digits'],
    ['-i {{in_1}} out.mp4', 'output "out.mp4" must be a placeholder declared in output_files'],
    ['-i {{in_1}} -', 'output to a pipe is not available'],
    ['-i {{in_1}} -f null /etc/passwd', 'must be a placeholder'],
    ['-i {{in_1}} /tmp/out.mp4', 'absolute paths are not allowed', folder],
    ['-i {{in_1}} ../out.mp4', '".." is not allowed', folder],
    ['-i {{in_1}} out.mp4 out.mp4', 'output "out.mp4" is written twice', folder],
    ['-i x.mp4 x.mp4', '"x.mp4" is both read and written', folder],
    ['-i {{in_1}} -hls_segment_filename /tmp/seg_%03d.ts -f hls {{out_1}}', '-hls_segment_filename "/tmp/seg_%03d.ts": absolute paths'],
    ['-i {{in_1}} -hls_segment_filename ../seg_%03d.ts -f hls {{out_1}}', '".." is not allowed'],
    ['-i {{in_1}} -master_pl_name sub/master.m3u8 -f hls a.m3u8', 'plain file name without folders', folder],
    ['-i {{in_1}} -segment_list /tmp/list.csv -f segment p%d.ts', 'absolute paths', folder],
    // options
    ['-filter_script graph.txt -i {{in_1}} {{out_1}}', 'option -filter_script is not allowed (it reads a file)'],
    ['-filter_complex_script graph.txt -i {{in_1}} {{out_1}}', 'option -filter_complex_script is not allowed'],
    ['-i {{in_1}} -attach font.ttf {{out_1}}', 'option -attach is not allowed'],
    ['-dump_attachment:t x -i {{in_1}} {{out_1}}', 'option -dump_attachment is not allowed'],
    ['-i {{in_1}} -passlogfile x {{out_1}}', 'option -passlogfile is not allowed'],
    ['-vstats_file x.log -i {{in_1}} {{out_1}}', 'option -vstats_file is not allowed'],
    ['-sdp_file x.sdp -i {{in_1}} {{out_1}}', 'option -sdp_file is not allowed'],
    ['-report -i {{in_1}} {{out_1}}', 'option -report is not allowed'],
    ['-i {{in_1}} -vpre slow {{out_1}}', 'option -vpre is not allowed (it reads preset files)'],
    ['-init_hw_device vaapi -i {{in_1}} {{out_1}}', 'hardware devices are not available'],
    ['-hwaccel cuda -i {{in_1}} {{out_1}}', 'option -hwaccel is not allowed'],
    ['-stdin -i {{in_1}} {{out_1}}', 'option -stdin is not allowed'],
    ['-protocol_whitelist file,http -i {{in_1}} {{out_1}}', 'option -protocol_whitelist is not allowed (the service sets it)'],
    ['-safe 0 -f concat -i {{in_1}} {{out_1}}', 'option -safe is not allowed (the service sets it)'],
    ['-progress progress.txt -i {{in_1}} {{out_1}}', 'option -progress is not allowed'],
    ['-/filter_complex graph.txt -i {{in_1}} {{out_1}}', 'the -/option form reads the value from a file'],
    ['-i {{in_1}} -foo 1 {{out_1}}', 'option -foo is unknown or not supported'],
    ['-i {{in_1}} -constructor 1 {{out_1}}', 'option -constructor is unknown or not supported'],
    ['-i {{in_1}} -f constructor {{out_1}}', '-f constructor is not allowed for outputs (it is unknown or not supported)'],
    ['-i {{in_1}} -vf __proto__ {{out_1}}', 'filter "__proto__" in -vf is unknown or not allowed'],
    ['-i {{in_1}} -- {{out_1}}', '"--" is not supported'],
    ['-i:v {{in_1}} {{out_1}}', 'write -i:v as -i, without a stream specifier'],
    ['-i {{in_1}} -c:v:/x libx264 {{out_1}}', 'invalid stream specifier'],
    ['-i {{in_1}} -c:v "lib x264" {{out_1}}', 'is not a codec name'],
    ['-map 0 -i {{in_1}} {{out_1}}', 'option -map applies to output files, but it is given for input'],
    ['-i {{in_1}} -stream_loop 1 {{out_1}}', 'option -stream_loop applies to input files'],
    ['-i {{in_1}} -x264-params stats=/tmp/x.log:pass=1 {{out_1}}', '-x264-params: "stats" is not allowed'],
    ['-i {{in_1}} -x265-params csv=x.csv {{out_1}}', '-x265-params: "csv" is not allowed'],
    ['-i {{in_1}} -x264-params keyint {{out_1}}', 'is not key=value'],
    ['-i {{in_1}} -x264-params "keyint=1:\'dump-yuv\'=x" {{out_1}}', 'only letters, digits'],
    ['-i {{in_1}} -f segment -segment_format tee p%d.ts', '-segment_format tee is not allowed', folder],
    ['-i {{in_1}} -var_stream_map "v:0,name:../../x" -f hls %v.m3u8', '-var_stream_map: only letters', folder],
    ['-i {{in_1}} -bsf:v nosuch {{out_1}}', 'bitstream filter "nosuch" is unknown or not allowed'],
    ['-pattern_type glob_sequence -i a%d.png {{out_1}}', '-pattern_type "glob_sequence" is not allowed'],
    ['-pattern_type 1 -i a%d.png {{out_1}}', '-pattern_type "1" is not allowed'],
    ['-i {{in_1}} -metadata {{in_1}} {{out_1}}', '{{in_1}} cannot be the value of -metadata'],
    ['-i {{in_1}}', 'no output file'],
    ['-i {{in_1}} {{out_1}} -c:v libx264', '-c:v at the end of ffmpeg_command apply to no file'],
    ['-i', 'option -i needs a value'],
    ['-i {{in_1}} -c:v', 'option -c:v needs a value'],
    // formats
    ['-i {{in_1}} -f tee "[f=mp4]a.mp4|[f=mp4]b.mp4"', '-f tee is not allowed for outputs (it writes to arbitrary destinations)'],
    ['-f x11grab -i :0.0 {{out_1}}', '-f x11grab is not allowed for inputs (it is a capture or playback device)'],
    ['-f v4l2 -i dev {{out_1}}', 'capture or playback device'],
    ['-f alsa -i default {{out_1}}', 'capture or playback device'],
    ['-i {{in_1}} -f lavfi {{out_1}}', '-f lavfi is not allowed for outputs (it can only be used for inputs)'],
    ['-i {{in_1}} -f image2pipe {{out_1}}', 'pipes are not available'],
    ['-f hls -i {{in_1}} {{out_1}}', 'it opens the files a playlist names'],
    ['-f fifo -i {{in_1}} {{out_1}}', '-f fifo is not allowed'],
    ['-i {{in_1}} -f "mp4,tee" {{out_1}}', 'is not a format name'],
    ['-f nosuchformat -i {{in_1}} {{out_1}}', 'unknown or not supported'],
    // placeholders
    ['-i {{in_9}} {{out_1}}', '{{in_9}} is used in ffmpeg_command but not declared in input_files'],
    ['-i {{in_1}} {{out_9}}', '{{out_9}} is used in ffmpeg_command but not declared in output_files'],
    ['-i {{foo}} {{out_1}}', 'not declared in input_files or output_files'],
    ['-i {{in_1}} {{out_1}}', 'output_files is OUTPUT_FOLDER: write output files as plain relative names', folder],
    ['-i x{{in_1}}.mp4 {{out_1}}', 'contains a placeholder inside a larger argument'],
    ['-i {{in_1}} -vf "movie={{in_2}}" {{out_1}}', 'inside a larger argument'],
    ['-i {{in-1}} {{out_1}}', 'is not a valid placeholder'],
    ['-i {{in_1}} {{in_1}}', '{{in_1}} is an input file and cannot be used as an output'],
    ['-i {{out_1}} {{out_2}}', '{{out_1}} is an output file; it can be read with -i only by a later command of a chain'],
    ['-i {{out_1}} {{out_1}}', '{{out_1}} is written by an earlier command of the chain', laterStep],
    ['-i {{in_1}} {{out_1}}', '{{out_1}} is written by an earlier command of the chain', laterStep],
    ['-i {{in_1}} -f segment -segment_list {{out_1}} {{out_1}}', '{{out_1}} is used as more than one output'],
    ['-i {{in_1}} {{out_1}} {{out_1}}', '{{out_1}} is used as more than one output'],
    // filtergraphs
    ['-i {{in_1}} -vf "movie=x.mp4" {{out_1}}', 'filter "movie" is not allowed in -vf (it reads files)'],
    ['-i {{in_1}} -vf "subtitles=subs.srt" {{out_1}}', 'filter "subtitles" is not allowed in -vf'],
    ['-i {{in_1}} -filter:v:0 "amovie=x.wav" {{out_1}}', 'filter "amovie" is not allowed in -filter:v:0'],
    ['-i {{in_1}} -lavfi "[0:v]sendcmd=f=x.cmd" {{out_1}}', 'filter "sendcmd" is not allowed in -lavfi'],
    ['-f lavfi -i "movie=/etc/passwd" {{out_1}}', 'filter "movie" is not allowed in -i (lavfi input)'],
    ['-f lavfi -i {{in_1}} {{out_1}}', 'with -f lavfi, -i takes a filtergraph'],
    ['-i {{in_1}} -vf "drawtext=text=hi:/etc/passwd" {{out_1}}', 'a value without a key after key=value options'],
    ['-i {{in_1}} -vf "scale=1:1," {{out_1}}', 'invalid filtergraph in -vf'],
    // text as a whole
    ['', 'ffmpeg_command is empty'],
    ['ffmpeg', 'ffmpeg_command is empty'],
    ['-i "{{in_1}} {{out_1}}', 'unterminated quote'],
    ["-i {{in_1}} -metadata title='x {{out_1}}", 'unterminated quote'],
    ['-i {{in_1}} -metadata title=\0 {{out_1}}', 'NUL character'],
    [`-i {{in_1}} -metadata title=${'x'.repeat(20_000)} {{out_1}}`, 'longer than 20000 characters'],
    [`-i {{in_1}} ${'-y '.repeat(1000)}{{out_1}}`, 'more than 1000 arguments'],
    [`${'-i {{in_1}} '.repeat(21)}{{out_1}}`, 'more than 20 inputs'],
    [`-i {{in_1}} ${Array.from({ length: 21 }, (_, i) => `o${i}.mp4`).join(' ')}`, 'more than 20 output files', folder],
  ];

  for (const [command, fragment, opts] of cases) {
    test(`${command.slice(0, 90)} -> ${fragment}`, () => {
      const message = rejection(command, opts ?? single);
      assert.ok(message.includes(fragment), `message was: ${message}`);
    });
  }
});

/** ffmpeg's stderr, whatever its exit status. */
async function ffmpegStderr(args: string[], cwd: string): Promise<string> {
  try {
    return (await run('ffmpeg', ['-hide_banner', '-nostdin', ...args], { cwd, maxBuffer: 16 << 20 })).stderr;
  } catch (error) {
    return (error as { stderr: string }).stderr;
  }
}

/** Runs `work` over items, `width` at a time. */
async function inBatches<T>(items: T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(work));
}

describe('the option and format tables match the real ffmpeg', () => {
  let dir: string;
  /** How ffmpeg reads each option: as its own 'option' or as a codec/format 'AVOption'. */
  const kinds = new Map<string, string>();
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'parse-test-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const probeValue = (spec: OptionSpec): string[] =>
    spec.value === 'none' ? [] : [spec.name === 'v' || spec.name === 'loglevel' ? 'debug' : `V_${spec.name}`];

  test('every allowed option exists and takes a value exactly when the table says so', async () => {
    // With -v debug, ffmpeg logs how it reads each option: "Reading option '-crf' ... matched as
    // AVOption 'crf' with argument 'V_crf'." A value-less option shows argument '1' (0 for -noX).
    // All options go on one line: an option whose arity the table gets wrong shifts everything after it.
    const specs = [...OPTION_TABLE.values()];
    const stderr = await ffmpegStderr(['-v', 'debug', ...specs.flatMap((spec) => [`-${spec.name}`, ...probeValue(spec)])], dir);
    const readings = [
      ...stderr.matchAll(
        /^Reading option '([^']*)' \.\.\.(?:(?!Reading option)[^])*?matched as (option|AVOption|output url)[^\n]*?(?: with argument (?:'([^'\n]*)'|(\d+)))?\.$/gm,
      ),
    ];
    // ffmpegStderr puts -hide_banner -nostdin first, then comes -v debug.
    assert.deepEqual(readings.slice(0, 3).map((m) => m[1]), ['-hide_banner', '-nostdin', '-v']);
    readings.splice(0, 3);
    for (const [i, spec] of specs.entries()) {
      const reading = readings[i];
      assert.ok(reading, `ffmpeg stopped before -${spec.name}:\n${stderr.slice(-2000)}`);
      const [, token, kind, quoted, bare] = reading;
      assert.equal(token, `-${spec.name}`, `the option before -${spec.name} took a value it should not have`);
      const expected = spec.value === 'none' ? (spec.name.startsWith('no') ? '0' : '1') : probeValue(spec)[0];
      assert.equal(quoted ?? bare, expected, `-${spec.name}: ffmpeg read ${kind} with argument ${quoted ?? bare}`);
      kinds.set(spec.name, kind);
    }
  });

  test('global options are global and per-file options are per-file', async () => {
    // A per-file option left at the end of the line makes ffmpeg warn "Trailing option(s) found";
    // a global one does not. AVOptions are always per-file.
    const problems: string[] = [];
    await inBatches([...OPTION_TABLE.values()], 8, async (spec) => {
      const kind = kinds.get(spec.name);
      assert.ok(kind, 'the previous test read every option');
      if (kind === 'AVOption') {
        if (spec.scope === 'global') problems.push(`-${spec.name}: an AVOption cannot be global`);
        return;
      }
      const stderr = await ffmpegStderr(['-v', 'debug', `-${spec.name}`, ...probeValue(spec)], dir);
      const perFile = stderr.includes('Trailing option(s) found');
      if (perFile !== (spec.scope !== 'global')) problems.push(`-${spec.name}: ffmpeg per-file=${perFile}`);
    });
    assert.deepEqual(problems, []);
  });

  test("ffmpeg's own input-only and output-only options are listed as such", async () => {
    // ffmpeg refuses its own options on the wrong kind of file ("cannot be applied to input url");
    // AVOptions of (de)muxers are not checked by ffmpeg, the table scopes them by meaning.
    const problems: string[] = [];
    const ownOptions = [...OPTION_TABLE.values()].filter((spec) => spec.scope !== 'global' && kinds.get(spec.name) === 'option');
    assert.ok(ownOptions.length > 50, 'the first test read the options');
    await inBatches(ownOptions, 8, async (spec) => {
      const option = [`-${spec.name}`, ...(spec.value === 'none' ? [] : ['1'])];
      const [beforeInput, beforeOutput] = await Promise.all([
        ffmpegStderr([...option, '-i', 'missing.nut'], dir),
        ffmpegStderr([...option, 'missing.nut'], dir),
      ]);
      const refusedForInput = beforeInput.includes('cannot be applied to input');
      const refusedForOutput = beforeOutput.includes('cannot be applied to output');
      const actual = refusedForInput ? 'output' : refusedForOutput ? 'input' : 'file';
      if (actual !== spec.scope) problems.push(`-${spec.name}: table ${spec.scope}, ffmpeg ${actual}`);
    });
    assert.deepEqual(problems, []);
  });

  test('every allowed format and bitstream filter exists', async () => {
    const listing = async (flag: string): Promise<string[]> =>
      (await run('ffmpeg', ['-hide_banner', flag])).stdout.split('\n').filter((line) => line.trim() !== '');
    // "-muxers" prints a legend, a "--" line, then " E mp4   MP4 (MPEG-4 Part 14)"; names may be "a,b".
    const formats = async (flag: string): Promise<Set<string>> => {
      const lines = await listing(flag);
      const rows = lines.slice(lines.findIndex((line) => line.trim() === '--') + 1);
      return new Set(rows.flatMap((row) => row.trim().split(/\s+/)[1].split(',')));
    };
    const demuxers = await formats('-demuxers');
    const muxers = await formats('-muxers');
    const bsfs = new Set((await listing('-bsfs')).slice(1).map((line) => line.trim()));
    assert.ok(demuxers.has('mov') && muxers.has('mp4') && bsfs.has('null'), 'the listings were read');
    assert.deepEqual([...INPUT_FORMATS].filter((f) => !demuxers.has(f)), []);
    assert.deepEqual([...OUTPUT_FORMATS].filter((f) => !muxers.has(f)), []);
    assert.deepEqual([...BITSTREAM_FILTERS].filter((f) => !bsfs.has(f)), []);
  });
});

describe('accepted commands run with the real ffmpeg', () => {
  let dir: string;
  const source = 'source.mp4';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'parse-run-'));
    await run('ffmpeg', ['-hide_banner', '-nostdin', '-v', 'error', '-f', 'lavfi', '-i', 'testsrc=d=1:s=64x64:r=10',
      '-f', 'lavfi', '-i', 'sine=d=1', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac',
      '-shortest', source], { cwd: dir });
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** The argv the parsed command stands for, with placeholders replaced by files in `cwd`. */
  function argvOf(parsed: ParsedCommand, files: Record<string, string>, cwd: string): string[] {
    const text = (arg: Arg): string => (typeof arg === 'string' ? arg : join(cwd, files[arg.alias]));
    return [
      ...parsed.globals.map(text),
      ...parsed.inputs.flatMap((input) => [...input.options.map(text), '-i', text(input.target)]),
      ...parsed.outputs.flatMap((output) => [...output.options.map(text), text(output.target)]),
    ];
  }

  const inputs = { in_1: `../${source}`, in_2: 'list.txt' };
  const makeFrames = async (cwd: string): Promise<void> => {
    await run('ffmpeg', ['-nostdin', '-v', 'error', '-i', join(dir, source), '-vf', 'fps=5', '-start_number', '1', 'frames/f_%03d.png'], { cwd });
  };
  const makeConcatList = async (cwd: string): Promise<void> => {
    await copyFile(join(dir, source), join(cwd, 'clip.mp4'));
    await writeFile(join(cwd, 'list.txt'), "file 'clip.mp4'\nfile 'clip.mp4'\n");
  };
  const cases: {
    command: string;
    files: Record<string, string>;
    expect: string[];
    opts?: ParseOptions;
    setup?: (cwd: string) => Promise<void>;
  }[] = [
    {
      command: '-i {{in_1}} -c:v libx264 -preset ultrafast -crf 30 -pix_fmt yuv420p -c:a aac -b:a 64k -movflags +faststart {{out_1}}',
      files: { ...inputs, out_1: 'out.mp4' },
      expect: ['out.mp4'],
    },
    {
      command:
        '-f lavfi -i testsrc=d=1:s=64x64:r=10 -f lavfi -i sine=d=1 -filter_complex ' +
        '"[0:v]split[a][b];[a]scale=32:32[a1];[b]hflip,drawbox=x=1:y=1:w=8:h=8:color=red@0.5[b1]" ' +
        '-map [a1] -map 1:a -c:v libx264 -preset ultrafast -c:a libmp3lame -shortest {{out_1}} -map [b1] -frames:v 1 {{out_2}}',
      files: { ...inputs, out_1: 'out.mkv', out_2: 'still.png' },
      expect: ['out.mkv', 'still.png'],
    },
    {
      command:
        '-ss 0.2 -t 0.5 -i {{in_1}} -vf "fps=5,scale=32:-2:flags=lanczos,split[s0][s1];[s0]palettegen[p];[s1][p]paletteuse" -loop 0 {{out_1}}',
      files: { ...inputs, out_1: 'out.gif' },
      expect: ['out.gif'],
    },
    {
      command: '-i {{in_1}} -af "loudnorm=I=-16:TP=-1.5:print_format=summary,aformat=channel_layouts=mono" -vn -f null -',
      files: inputs,
      expect: [],
    },
    {
      command: '-i {{in_1}} -map 0:a -c:a libopus -b:a 32k -metadata title="My clip" -metadata:s:a:0 language=eng {{out_1}}',
      files: { ...inputs, out_1: 'out.ogg' },
      expect: ['out.ogg'],
    },
    {
      command: '-i {{in_1}} -c copy -bsf:v h264_mp4toannexb -f mpegts {{out_1}}',
      files: { ...inputs, out_1: 'out.ts' },
      expect: ['out.ts'],
    },
    {
      command: '-i {{in_1}} -an -c:v libx264 -preset ultrafast -x264-params keyint=5:min-keyint=5:scenecut=0 -g 5 -tag:v avc1 {{out_1}}',
      files: { ...inputs, out_1: 'gop.mp4' },
      expect: ['gop.mp4'],
    },
    {
      command:
        '-i {{in_1}} -c:v libx264 -preset ultrafast -g 5 -c:a aac -f hls -hls_time 0.5 -hls_list_size 0 ' +
        '-hls_playlist_type vod -hls_segment_filename "hls/seg_%03d.ts" hls/index.m3u8',
      files: inputs,
      expect: ['hls/index.m3u8', 'hls/seg_000.ts'],
      opts: folder,
    },
    {
      command: '-i {{in_1}} -c copy -f segment -segment_time 0.5 -segment_list parts.csv -reset_timestamps 1 part_%02d.mp4',
      files: inputs,
      expect: ['parts.csv', 'part_00.mp4'],
      opts: folder,
    },
    {
      command: '-i {{in_1}} -vf "fps=5,scale=16:16" -start_number 1 frames/f_%03d.png',
      files: inputs,
      expect: ['frames/f_001.png'],
      opts: folder,
    },
    {
      command: '-framerate 5 -start_number 1 -i frames/f_%03d.png -pattern_type glob -framerate 5 -i "frames/*.png" -map 0 {{out_1}} -map 1 {{out_2}}',
      files: { ...inputs, out_1: 'seq.mkv', out_2: 'glob.mkv' },
      expect: ['seq.mkv', 'glob.mkv'],
      setup: makeFrames,
    },
    {
      command: '-f concat -i {{in_2}} -c copy -fflags +genpts {{out_1}}',
      files: { ...inputs, out_1: 'joined.mp4' },
      expect: ['joined.mp4'],
      setup: makeConcatList,
    },
  ];

  for (const { command, files, expect, opts, setup } of cases) {
    test(command.slice(0, 100), async () => {
      // Each command runs in its own folder; folder-mode names are relative to it.
      const cwd = await mkdtemp(join(dir, 'run-'));
      await mkdir(join(cwd, 'hls'));
      await mkdir(join(cwd, 'frames'));
      await setup?.(cwd);
      const parsed = parseFfmpegCommand(command, opts ?? single);
      const argv = ['-hide_banner', '-nostdin', '-v', 'error', '-y', ...argvOf(parsed, files, cwd)];
      await run('ffmpeg', argv, { cwd }).catch((error: { stderr: string }) => assert.fail(`${argv.join(' ')}\n${error.stderr}`));
      for (const name of expect) {
        const info = await stat(join(cwd, name)).catch(async () =>
          assert.fail(`${name} missing; the folder has ${(await readdir(cwd, { recursive: true })).join(', ')}`),
        );
        assert.ok(info.size > 0, `${name} is empty`);
      }
    });
  }
});
