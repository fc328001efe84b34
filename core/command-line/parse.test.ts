import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildFfmpegArgv } from '../media/ffmpeg-args.ts';
import { makeMediaFixtures } from './testing/ffmpeg-test-support.ts';
import { checkFfmpegCommand, parseFfmpegCommand } from './parse.ts';
import type { ParseOptions } from './parse.ts';
import { BITSTREAM_FILTERS, INPUT_FORMATS, OPTION_TABLE, OUTPUT_FORMATS } from './option-table.ts';
import type { OptionSpec } from './option-table.ts';
import { CommandRejected } from './parsed-command.ts';
import type { Arg, ParsedCommand } from './parsed-command.ts';

const run = promisify(execFile);

const single: ParseOptions = {
  inputAliases: new Set(['in_1', 'in_2', 'in_srt', 'in_font', 'in_logo']),
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
    const parsed = parseFfmpegCommand('ffmpeg -y -hide_banner -i {{in_1}} -c:v libx264 -crf 23 -vf "scale=640:-2" {{out_1}}', single);
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

  test('placeholders inside arguments: filter options, -attach, metadata; each one is an input read', () => {
    const parsed = parseFfmpegCommand(
      '-i {{in_1}} -vf "subtitles={{in_srt}}:force_style=\'Fontsize=24,PrimaryColour=&H0000ff&\'" ' +
        '-attach {{in_font}} -metadata:s:t mimetype=font/ttf -metadata "comment=made from {{in_1}}" {{out_1}}',
      single,
    );
    assert.deepEqual(parsed.outputs, [
      {
        options: [
          '-vf',
          { template: ['subtitles=', { alias: 'in_srt', levels: ['bare', 'bare'] }, ":force_style='Fontsize=24,PrimaryColour=&H0000ff&'"] },
          '-attach',
          { alias: 'in_font' },
          '-metadata:s:t',
          'mimetype=font/ttf',
          '-metadata',
          { template: ['comment=made from ', { alias: 'in_1', levels: [] }] },
        ],
        target: { alias: 'out_1' },
      },
    ] satisfies ParsedCommand['outputs']);
    assert.deepEqual(parsed.inputAliases, ['in_1', 'in_srt', 'in_font']);
  });

  test("Rendi's subtitles example, and a quoted placeholder inside a filter", () => {
    const rendi = parseFfmpegCommand('-i {{in_1}} -ss 00:00 -to 01:00 -vf subtitles={{in_srt}} -c:v libx264 -crf 20 {{out_1}}', single);
    assert.deepEqual(rendi.inputAliases, ['in_1', 'in_srt']);
    const quoted = parseFfmpegCommand(`-i {{in_1}} -filter_complex "[0:v]subtitles='{{in_srt}}'[v]" -map [v] {{out_1}}`, single);
    assert.deepEqual(quoted.globals[1], { template: ["[0:v]subtitles='", { alias: 'in_srt', levels: ['quoted', 'bare'] }, "'[v]"] });
  });

  test("the shell's quoting, then ffmpeg's: an escaped colon inside quotes reaches ffmpeg", () => {
    const parsed = parseFfmpegCommand(`-i {{in_1}} -filter_complex "drawtext=text='LEVEL\\: 3':fontsize=42" {{out_1}}`, single);
    assert.deepEqual(parsed.globals, ['-filter_complex', "drawtext=text='LEVEL\\: 3':fontsize=42"]);
  });

  test('an earlier step output read inside a filter of a later step', () => {
    const parsed = parseFfmpegCommand('-i {{in_1}} -vf "movie={{out_1}}[m];[in][m]overlay" {{out_2}}', laterStep);
    assert.deepEqual(parsed.inputAliases, ['in_1', 'out_1']);
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
      // files read by filters and options, from placeholders or from the working folder (a zip)
      ['-i sample.mp4 -vf "subtitles=sample.srt:fontsdir=.:force_style=\'FontName=Poppins,Fontsize=24\'" -c:a copy {{out_1}}', single],
      ['-i {{in_1}} -vf "ass=subs.ass:fontsdir=fonts" {{out_1}}', single],
      ['-i {{in_1}} -vf "drawtext=fontfile=MyFont.ttf:text=\'Hello\':fontcolor=white:fontsize=48" {{out_1}}', single],
      ['-i {{in_1}} -vf "drawtext=fontfile={{in_font}}:text=\'LEVEL\\: 3\':fontsize=42:x=(w-text_w)/2" {{out_1}}', single],
      ['-i {{in_1}} -vf "drawtext=textfile=caption.txt:reload=1" {{out_1}}', single],
      // an icon font's glyph (Unicode private use area) and an emoji next to a placeholder
      ['-i {{in_1}} -vf "drawtext=fontfile={{in_font}}:text=\'\uf007 \u{1f600}\'" {{out_1}}', single],
      ['-i {{in_1}} -vf "movie={{in_logo}}[wm];[in][wm]overlay=W-w-10:10[out]" {{out_1}}', single],
      ['-i {{in_1}} -filter_complex "amovie=music.mp3[a];[0:a][a]amix=inputs=2" {{out_1}}', single],
      ['-f lavfi -i "movie={{in_1}}:s=dv+da[out0][out1]" {{out_1}}', single],
      ['-i {{in_1}} -vf "lut3d={{in_2}}:interp=trilinear" {{out_1}}', single],
      ['-i {{in_1}} -vf "lut3d=file=grade.cube,curves=psfile=look.acv" {{out_1}}', single],
      ['-i {{in_1}} -attach fonts/Poppins.ttf -metadata:s:t mimetype=font/ttf -c copy {{out_1}}', single],
      ['-dump_attachment:t:0 font.ttf -i {{in_1}} -f null -', single],
      ['-dump_attachment:t {{out_1}} -i {{in_1}} -f null -', single],
      ['-f concat -i list.txt -c copy {{out_1}}', single],
      ['-i {{in_1}} -vf "select=\'eq(pict_type\\,I)\'" -vsync vfr thumb_%03d.png', folder],
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
    ['-i "a|b.mp4" {{out_1}}', 'only letters, digits, spaces'],
    ['-i "a<b>.mp4" {{out_1}}', 'only letters, digits, spaces'],
    ['-i media//x.mp4 {{out_1}}', 'empty folder names'],
    ['-i "frames/*.png" {{out_1}}', 'only letters, digits, spaces'],
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
    ['-i {{in_1}} -attach /etc/passwd {{out_1}}', '-attach "/etc/passwd": it is outside the font folders'],
    ['-i {{in_1}} -attach /usr/share/fonts/../../../etc/passwd {{out_1}}', '"." and ".." are not allowed'],
    ['-i {{in_1}} -attach {{out_2}} {{out_1}}', '{{out_2}} is an output file of this command'],
    ['-i {{in_1}} -attach x{{in_2}} {{out_1}}', 'a file is a placeholder alone, such as {{in_1}}, or a relative name'],
    ['-i x.mp4 -attach out.mp4 out.mp4', '"out.mp4" is both read and written', folder],
    ['-dump_attachment:t "" -i {{in_1}} -f null -', '-dump_attachment:t "": the file name is empty'],
    ['-dump_attachment:t /tmp/x.ttf -i {{in_1}} -f null -', 'absolute paths are not allowed'],
    ['-dump_attachment:t {{in_2}} -i {{in_1}} -f null -', '{{in_2}} is an input file and cannot be used as an output'],
    ['-i {{in_1}} -passlogfile x {{out_1}}', 'option -passlogfile is not allowed'],
    ['-vstats_file x.log -i {{in_1}} {{out_1}}', 'option -vstats_file is not allowed'],
    ['-sdp_file x.sdp -i {{in_1}} {{out_1}}', 'option -sdp_file is not allowed'],
    ['-report -i {{in_1}} {{out_1}}', 'option -report is not allowed'],
    ['-i {{in_1}} -vpre slow {{out_1}}', 'option -vpre is not allowed (it reads preset files)'],
    ['-init_hw_device vaapi -i {{in_1}} {{out_1}}', 'hardware devices are not available'],
    ['-hwaccel cuda -i {{in_1}} {{out_1}}', 'option -hwaccel is not allowed'],
    ['-stdin -i {{in_1}} {{out_1}}', 'option -stdin is not allowed'],
    [
      '-protocol_whitelist file,http -i {{in_1}} {{out_1}}',
      'option -protocol_whitelist is not allowed (it decides which protocols ffmpeg may open',
    ],
    ['-safe 0 -f concat -i {{in_1}} {{out_1}}', 'option -safe is not allowed (it decides whether concat lists may name any path'],
    ['-max_pixels 1000000000 -i {{in_1}} {{out_1}}', 'option -max_pixels is not allowed (it lifts the picture size limit'],
    ['-codec_whitelist h264 -i {{in_1}} {{out_1}}', 'option -codec_whitelist is not allowed'],
    ['-enable_drefs 1 -i {{in_1}} {{out_1}}', 'option -enable_drefs is not allowed (it lets a QuickTime file open other files'],
    ['-max_alloc 99999999999 -i {{in_1}} {{out_1}}', 'option -max_alloc is not allowed'],
    ['-progress progress.txt -i {{in_1}} {{out_1}}', 'option -progress is not allowed'],
    ['-/filter_complex graph.txt -i {{in_1}} {{out_1}}', 'the -/option form reads the value from a file'],
    ['-i {{in_1}} -filter_script:v x.txt {{out_1}}', 'option -filter_script is not allowed (it reads a file)'],
    ['-i {{in_1}} -rtbufsize 1 {{out_1}}', 'option -rtbufsize is not supported'],
    ['-i {{in_1}} -vf tmidequalizer {{out_1}}', 'filter "tmidequalizer" in -vf is not allowed'],
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
    ['-i {{in_1}} -c:v {{in_1}} {{out_1}}', '-c:v does not take a placeholder'],
    ['-i {{in_1}} -hls_segment_filename {{in_2}}_%d.ts -f hls {{out_1}}', '-hls_segment_filename does not take a placeholder'],
    ['-i {{in_1}} -metadata title={{out_1}} {{out_1}}', '{{out_1}} is an output file of this command'],
    ['-i {{in_1}}', 'no output file'],
    ['-i {{in_1}} {{out_1}} -c:v libx264', '-c:v at the end of ffmpeg_command apply to no file'],
    ['-i', 'option -i needs a value'],
    ['-i {{in_1}} -c:v', 'option -c:v needs a value'],
    // formats
    ['-i {{in_1}} -f tee "[f=mp4]a.mp4|[f=mp4]b.mp4"', '-f tee slave 1: its file "a.mp4" must be an output placeholder'],
    ['-f x11grab -i :0.0 {{out_1}}', '-f x11grab is not allowed for inputs (it is a capture or playback device)'],
    ['-f v4l2 -i dev {{out_1}}', 'capture or playback device'],
    ['-f alsa -i default {{out_1}}', 'capture or playback device'],
    ['-i {{in_1}} -f pulse default', '-f pulse is not allowed for outputs (it is a capture or playback device)', folder],
    ['-i {{in_1}} -f image2pipe {{out_1}}', 'pipes are not available'],
    ['-f hls -i {{in_1}} {{out_1}}', 'it opens the files a playlist names'],
    ['-i {{in_1}} -f fifo {{out_1}}', '-f fifo is not allowed'],
    ['-i {{in_1}} -f "mp4,tee" {{out_1}}', 'is not a format name'],
    // placeholders
    ['-i {{in_9}} {{out_1}}', '{{in_9}} is used in ffmpeg_command but not declared in input_files'],
    ['-i {{in_1}} {{out_9}}', '{{out_9}} is used in ffmpeg_command but not declared in output_files'],
    ['-i {{foo}} {{out_1}}', 'not declared in input_files or output_files'],
    ['-i {{in_1}} {{out_1}}', 'output_files is OUTPUT_FOLDER: write output files as plain relative names', folder],
    ['-i x{{in_1}}.mp4 {{out_1}}', '-i "x{{in_1}}.mp4": a file is a placeholder alone, such as {{in_1}}, or a relative name, not both'],
    ['-i {{in_1}} {{out_1}}.mp4', 'output "{{out_1}}.mp4": a file is a placeholder alone, such as {{out_1}}'],
    ['-i {{in_1}} out_{{out_1}}', 'a file is a placeholder alone', folder],
    ['-i {{in-1}} {{out_1}}', 'is not a valid placeholder'],
    ['-i {{in_1}} -vf "subtitles={{in-2}}" {{out_1}}', '"{{in-2}}" is not a valid placeholder'],
    ['-i {{in_1}} -vf "subtitles={{in_2}" {{out_1}}', 'has an unbalanced "{{" or "}}"'],
    ['-i {{in_1}} -vf "subtitles={{in_9}}" {{out_1}}', '{{in_9}} is used in ffmpeg_command but not declared in input_files'],
    ['-i {{in_1}} -vf "subtitles={{out_1}}" {{out_1}}', '{{out_1}} is an output file of this command'],
    ['-i {{in_1}} -vf "subtitles={{out_2}}" {{out_1}}', '{{out_2}} is an output file of this command'],
    ['-i {{in_1}} -vf "subtitles=subs/{{in_2}}" {{out_1}}', 'option "filename" of filter "subtitles" in -vf must be a placeholder alone'],
    ['-i {{in_1}} -vf "subtitles=x.srt:fontsdir={{in_2}}" {{out_1}}', 'names a folder, so it cannot be a file placeholder'],
    ['-i {{in_1}} -vf "{{in_2}}" {{out_1}}', 'a placeholder cannot stand in a filter name'],
    ['-i {{in_1}} -filter_complex "[{{in_2}}]null" {{out_1}}', 'a placeholder cannot stand in a link label'],
    [String.raw`-i {{in_1}} -vf "subtitles=\\{{in_2}}" {{out_1}}`, 'a placeholder cannot follow a backslash'],
    ['-i {{in_1}} -metadata title=\udc00 {{out_1}}', 'not valid Unicode (it has a lone surrogate)'],
    ['-i {{in_1}} -metadata title=\ud83d {{out_1}}', 'not valid Unicode'],
    ['-i {{in_1}} {{in_1}}', '{{in_1}} is an input file and cannot be used as an output'],
    ['-i {{out_1}} {{out_2}}', '{{out_1}} is an output file of this command; only a later command of a chain can read it'],
    ['-i {{out_1}} {{out_1}}', '{{out_1}} is written by an earlier command of the chain', laterStep],
    ['-i {{in_1}} {{out_1}}', '{{out_1}} is written by an earlier command of the chain', laterStep],
    ['-i {{in_1}} -f segment -segment_list {{out_1}} {{out_1}}', '{{out_1}} is used as more than one output'],
    ['-i {{in_1}} {{out_1}} {{out_1}}', '{{out_1}} is used as more than one output'],
    // filtergraphs
    ['-i {{in_1}} -vf "movie=/etc/passwd" {{out_1}}', 'option "filename" of filter "movie" in -vf "/etc/passwd": absolute paths'],
    [String.raw`-i {{in_1}} -vf "movie='http\://169.254.169.254/x'" {{out_1}}`, 'protocols (like file:, http:, concat:)'],
    ['-i {{in_1}} -vf "subtitles=../../etc/passwd" {{out_1}}', '".." is not allowed'],
    ['-i {{in_1}} -filter:v:0 "amovie=/dev/urandom" {{out_1}}', 'option "filename" of filter "amovie" in -filter:v:0'],
    ['-i {{in_1}} -vf "drawtext=fontfile=/usr/share/fonts/../x.ttf:text=x" {{out_1}}', 'option "fontfile" of filter "drawtext"'],
    ['-i {{in_1}} -vf "drawtext=fontfile=/proc/self/root/usr/share/fonts/x.ttf" {{out_1}}', 'outside the font folders'],
    ['-i {{in_1}} -vf "lut3d=/etc/x.cube" {{out_1}}', 'option "file" of filter "lut3d"'],
    ['-i {{in_1}} -af "ladspa=file=cmt:amp_mono" {{out_1}}', 'filter "ladspa" is not allowed in -af (it loads plugins)'],
    ['-i {{in_1}} -af "lv2=p=http\\://x" {{out_1}}', 'filter "lv2" is not allowed'],
    ['-i {{in_1}} -vf "frei0r=filter_name=distort0r" {{out_1}}', 'filter "frei0r" is not allowed'],
    ['-i {{in_1}} -vf "dnn_processing=dnn_backend=native:model=x.model" {{out_1}}', 'filter "dnn_processing" is not allowed'],
    ['-i {{in_1}} -lavfi "[0:v]sendcmd=f=x.cmd" {{out_1}}', 'filter "sendcmd" is not allowed in -lavfi'],
    ['-f lavfi -i "movie=/etc/passwd" {{out_1}}', 'option "filename" of filter "movie" in -i (lavfi input)'],
    ['-f lavfi -i "movie={{in_1}}:f=lavfi" {{out_1}}', 'format lavfi would run a filtergraph'],
    ['-f lavfi -i {{in_1}} {{out_1}}', 'with -f lavfi, -i takes a filtergraph'],
    ['-i {{in_1}} -vf "drawtext=text=hi:/etc/passwd" {{out_1}}', 'option "textfile" of filter "drawtext" in -vf "/etc/passwd"'],
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

describe('checkFfmpegCommand leaves to ffmpeg', () => {
  // [command, ffmpeg's message, options]: accepted, and ffmpeg would stop with this message.
  const cases: [string, string, ParseOptions?][] = [
    ['-i {{in_1}} -foo 1 {{out_1}}', "Unrecognized option 'foo'.\nError splitting the argument list: Option not found"],
    ['-i {{in_1}} -constructor 1 {{out_1}}', "Unrecognized option 'constructor'."],
    ['-i {{in_1}} -foo:v -i /etc/passwd', "Unrecognized option 'foo:v'."], // ffmpeg reads no further
    ['-i {{in_1}} -f constructor {{out_1}}', "Requested output format 'constructor' is not a suitable output format"],
    ['-i {{in_1}} -f lavfi {{out_1}}', "Requested output format 'lavfi' is not a suitable output format"],
    ['-f nosuchformat -i {{in_1}} {{out_1}}', "Unknown input format: 'nosuchformat'"],
    ['-f fifo -i {{in_1}} {{out_1}}', "Unknown input format: 'fifo'"],
    ['-i {{in_1}} -vf __proto__ {{out_1}}', "No such filter: '__proto__'"],
    ['-i {{in_1}} -vf nosuchfilter {{out_1}}', "No such filter: 'nosuchfilter'"],
    ['-i {{in_1}} -vf "scale=1:1," {{out_1}}', "No such filter: ''"],
    [
      `-i {{in_1}} -vf "drawtext=text='it's':fontsize=24:enable='gte(t,1)'" {{out_1}}`,
      "Error when evaluating the expression 'gte(t' for enable",
    ],
    // ffmpeg stops at the first: options, then inputs, then -filter_complex, then outputs, then -vf
    ['-i {{in_1}} -vf nosuch1 -f nosuchmux {{out_1}}', "Requested output format 'nosuchmux'"],
    ['-i {{in_1}} -filter_complex "[0:v]nosuch2" -f nosuchmux {{out_1}}', "No such filter: 'nosuch2'"],
    ['-f nosuchdemux -i {{in_1}} -filter_complex "[0:v]nosuch2" {{out_1}}', "Unknown input format: 'nosuchdemux'"],
    ['-f lavfi -i "nosuchsrc" {{out_1}}', "No such filter: 'nosuchsrc'"],
    ['-i {{in_1}} -vf "subtitles={{in_2}}:fontsdir=.,[x" {{out_1}}', `Mismatched '[' found in the following: "[x".`],
  ];
  for (const [command, message, opts] of cases) {
    test(`${command.slice(0, 90)} -> ${message.split('\n')[0]}`, () => {
      const { ffmpegFailure } = checkFfmpegCommand(command, opts ?? single);
      assert.ok(ffmpegFailure?.startsWith(message), `ffmpegFailure was: ${ffmpegFailure}`);
      assert.throws(() => parseFfmpegCommand(command, opts ?? single), CommandRejected);
    });
  }

  test('after an option ffmpeg does not know, the outputs named later still count (a chain reads them)', () => {
    const two: ParseOptions = { inputAliases: new Set(['in_1']), outputAliases: new Set(['out_1', 'out_2']) };
    const { command, ffmpegFailure } = checkFfmpegCommand('-i {{in_1}} -foo 1 {{out_1}} -f mp4 {{out_2}} {{in_9}}', two);
    assert.match(ffmpegFailure ?? '', /Unrecognized option 'foo'/);
    assert.deepEqual(command.outputAliases, ['out_1', 'out_2']);
  });

  test('still refuses what the service never allows, wherever the graph stops', () => {
    for (const command of [
      '-i {{in_1}} -vf "nosuchfilter,movie=/etc/passwd" {{out_1}}',
      '-i {{in_1}} -vf "movie=/etc/passwd[]" {{out_1}}',
      '-i {{in_1}} -vf "scale=1:1,," -protocol_whitelist http {{out_1}}',
      '-i {{in_1}} -vf nosuchfilter {{out_9}}',
    ]) {
      assert.throws(() => checkFfmpegCommand(command, single), CommandRejected, command);
    }
  });
});

describe('tee outputs', () => {
  const two: ParseOptions = { inputAliases: new Set(['in_1']), outputAliases: new Set(['out_1', 'out_2']) };
  test('every slave writes an output placeholder, escaped for the slave level', () => {
    const parsed = parseFfmpegCommand(
      '-i {{in_1}} -map 0 -f tee "[f=mp4:movflags=+faststart]{{out_1}}|[f=matroska:select=v]\'{{out_2}}\'"',
      two,
    );
    assert.deepEqual(parsed.outputAliases, ['out_1', 'out_2']);
    const argv = buildFfmpegArgv(parsed, (alias) => `.out/${alias}/a b|c.mp4`, { threads: 1 });
    assert.equal(argv.at(-1), String.raw`[f=mp4:movflags=+faststart]\.out/out_1/a\ b\|c.mp4|[f=matroska:select=v]'.out/out_2/a b|c.mp4'`);
  });
  test('with OUTPUT_FOLDER, slaves may write relative names', () => {
    const parsed = parseFfmpegCommand('-i {{in_1}} -f tee "[f=mp4]a.mp4|[f=webm:onfail=ignore]b/c.webm"', folder);
    assert.deepEqual(parsed.outputs[0].target, '[f=mp4]a.mp4|[f=webm:onfail=ignore]b/c.webm');
  });
  const refusals: [string, string, ParseOptions?][] = [
    ['-i {{in_1}} -f tee "[f=mp4]{{out_1}}|[f=mp4]/tmp/x.mp4"', 'slave 2: its file "/tmp/x.mp4" must be an output placeholder'],
    ['-i {{in_1}} -f tee "[f=mp4]{{out_1}}|/tmp/x.mp4"', 'slave 2'],
    ['-i {{in_1}} -f tee "[f=mp4]a.mp4|[f=mp4]/abs/x.mp4"', 'absolute paths are not allowed', folder],
    ['-i {{in_1}} -f tee "[f=mp4]a.mp4|[f=mp4]../x.mp4"', '".." is not allowed', folder],
    ['-i {{in_1}} -f tee "a.mp4|tcp://10.0.0.1:9/x"', 'protocols', folder],
    ['-i {{in_1}} -f tee "a.mp4|file:/etc/x"', 'protocols', folder],
    ['-i {{in_1}} -f tee "a.mp4|\'file:x\'"', 'protocols', folder],
    [String.raw`-i {{in_1}} -f tee "a.mp4|fi\le\:x"`, 'protocols', folder],
    ['-i {{in_1}} -f tee "[f=mp4:hls_segment_filename=/tmp/x]a.mp4"', 'option "hls_segment_filename" is not allowed', folder],
    ['-i {{in_1}} -f tee "[f=mp4:protocol_whitelist=tcp]a.mp4"', 'option "protocol_whitelist" is not allowed', folder],
    ['-i {{in_1}} -f tee "[use_fifo=1]a.mp4"', 'option "use_fifo" is not allowed', folder],
    ['-i {{in_1}} -f tee "[f=tee]a.mp4"', 'option "f"', folder],
    ['-i {{in_1}} -f tee "[f=hls]a.m3u8"', 'option "f"', folder],
    ['-i {{in_1}} -f tee "[f=mp4:movflags=a/b]a.mp4"', 'option "movflags"', folder],
    ['-i {{in_1}} -f tee "[f=mp4]{{out_1}}|[f=mp4]{{out_1}}"', 'used as more than one output', two],
    ['-i {{in_1}} -f tee "[f=mp4]{{in_1}}"', 'is an input file and cannot be used as an output', two],
    ['-i {{in_1}} -f tee "[f=mp4]x{{out_1}}"', 'a placeholder alone', two],
    ['-i {{in_1}} -f tee "[f={{out_2}}]{{out_1}}"', 'a placeholder can only be the slave', two],
    ['-i {{in_1}} -f tee "[f=mp4{{out_1}}"', 'slave 1', two],
    ['-i {{in_1}} -f tee "a.mp4|a.mp4"', 'written twice', folder],
  ];
  for (const [command, fragment, opts] of refusals) {
    test(`refuses ${command.slice(0, 90)}`, () => {
      const message = rejection(command, opts ?? two);
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
    assert.deepEqual(
      readings.slice(0, 3).map((m) => m[1]),
      ['-hide_banner', '-nostdin', '-v'],
    );
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
    assert.deepEqual(
      [...INPUT_FORMATS].filter((f) => !demuxers.has(f)),
      [],
    );
    assert.deepEqual(
      [...OUTPUT_FORMATS].filter((f) => !muxers.has(f)),
      [],
    );
    assert.deepEqual(
      [...BITSTREAM_FILTERS].filter((f) => !bsfs.has(f)),
      [],
    );
  });
});

describe('accepted commands run with the real ffmpeg', () => {
  let dir: string;
  const source = 'source.mp4';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'parse-run-'));
    await run(
      'ffmpeg',
      [
        '-hide_banner',
        '-nostdin',
        '-v',
        'error',
        '-f',
        'lavfi',
        '-i',
        'testsrc=d=1:s=64x64:r=10',
        '-f',
        'lavfi',
        '-i',
        'sine=d=1',
        '-c:v',
        'libx264',
        '-preset',
        'ultrafast',
        '-pix_fmt',
        'yuv420p',
        '-c:a',
        'aac',
        '-shortest',
        source,
      ],
      { cwd: dir },
    );
    await makeMediaFixtures(dir);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** The service's argv for the parsed command, with placeholders resolved to paths relative to the run's folder. */
  function argvOf(parsed: ParsedCommand, files: Record<string, string>): string[] {
    return buildFfmpegArgv(parsed, (alias) => files[alias], { threads: 2 });
  }

  // Inputs as the runner lays them out (.in/<alias>/<name>), with names that need escaping.
  const inputs = { in_1: `../${source}`, in_2: 'list.txt' };
  const placed = {
    in_srt: ".in/in_srt/it's [subs], v1.srt",
    in_font: '.in/in_font/Deja Vu;Sans=1.ttf',
    in_logo: '.in/in_logo/logo (red).png',
    in_cube: '.in/in_cube/grade:warm.cube',
  };
  const placeFixtures = async (cwd: string): Promise<void> => {
    const fixtures = { in_srt: 'subs.srt', in_font: 'font.ttf', in_logo: 'logo.png', in_cube: 'grade.cube' };
    for (const [alias, name] of Object.entries(fixtures)) {
      const path = join(cwd, placed[alias as keyof typeof placed]);
      await mkdir(dirname(path), { recursive: true });
      await copyFile(join(dir, name), path);
    }
  };
  const fromFixtures =
    (...names: string[]) =>
    async (cwd: string): Promise<void> => {
      for (const name of names) await copyFile(join(dir, name), join(cwd, name));
    };
  const streamTypes = async (cwd: string, file: string): Promise<string[]> => {
    const { stdout } = await run(
      'ffprobe',
      ['-v', 'error', '-show_entries', 'stream=codec_type:stream_tags=mimetype', '-of', 'csv=p=0', file],
      { cwd },
    );
    return stdout.trim().split('\n');
  };
  const withPlaced: ParseOptions = { ...single, inputAliases: new Set([...single.inputAliases, ...Object.keys(placed)]) };
  const makeFrames = async (cwd: string): Promise<void> => {
    await run('ffmpeg', ['-nostdin', '-v', 'error', '-i', join(dir, source), '-vf', 'fps=5', '-start_number', '1', 'frames/f_%03d.png'], {
      cwd,
    });
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
    check?: (cwd: string) => Promise<void>;
  }[] = [
    {
      // Rendi's example; the subtitle file's name needs escaping at both levels of the graph.
      command:
        '-i {{in_1}} -ss 00:00 -to 00:01 -vf subtitles={{in_srt}} -c:v libx264 -preset ultrafast -crf 20 -c:a aac -b:a 192k {{out_1}}',
      files: { ...inputs, ...placed, out_1: 'subtitled.mp4' },
      expect: ['subtitled.mp4'],
      opts: withPlaced,
      setup: placeFixtures,
    },
    {
      command:
        "-i {{in_1}} -vf \"subtitles='{{in_srt}}':force_style='Fontsize=24,PrimaryColour=&H0000ff&'\" " +
        '-c:v libx264 -preset ultrafast -an {{out_1}}',
      files: { ...inputs, ...placed, out_1: 'styled.mp4' },
      expect: ['styled.mp4'],
      opts: withPlaced,
      setup: placeFixtures,
    },
    {
      // Rendi's fonts from a zip: everything in the working folder, fontsdir=.
      command:
        '-i clip.mkv -vf "subtitles=subs.ass:fontsdir=.:force_style=\'FontName=DejaVu Sans,Fontsize=20\'" ' +
        '-map 0:v -map 0:a -c:v libx264 -preset ultrafast {{out_1}}',
      files: { out_1: 'zip.mp4' },
      expect: ['zip.mp4'],
      setup: fromFixtures('clip.mkv', 'subs.ass', 'font.ttf'),
    },
    {
      command:
        '-i {{in_1}} -vf "drawtext=fontfile={{in_font}}:text=\'LEVEL\\: 3\':fontsize=20:x=2:y=2" -attach {{in_font}} ' +
        '-metadata:s:t mimetype=font/ttf -c:v libx264 -preset ultrafast -c:a copy {{out_1}}',
      files: { ...inputs, ...placed, out_1: 'with-font.mkv' },
      expect: ['with-font.mkv'],
      opts: withPlaced,
      setup: placeFixtures,
      check: async (cwd) => assert.ok((await streamTypes(cwd, 'with-font.mkv')).includes('attachment,font/ttf')),
    },
    {
      // A system font attached by its path.
      command: '-i {{in_1}} -attach /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf -metadata:s:t mimetype=font/ttf -c copy {{out_1}}',
      files: { ...inputs, out_1: 'system-font.mkv' },
      expect: ['system-font.mkv'],
      check: async (cwd) => assert.ok((await streamTypes(cwd, 'system-font.mkv')).includes('attachment,font/ttf')),
    },
    {
      // A system font by its path, and tee writing two files whose names need escaping at the slave level
      // (matroska needs the encoders' global headers, or tee drops that slave and goes on).
      command:
        '-i {{in_1}} -vf "drawtext=fontfile=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf:text=Hi" -c:v libx264 -preset ultrafast ' +
        '-c:a aac -flags +global_header -map 0 -f tee "[f=mp4:movflags=+faststart]{{out_1}}|[f=matroska:select=v]{{out_2}}"',
      files: { ...inputs, out_1: 'tee|one [a].mp4', out_2: "tee two's.mkv" },
      expect: ['tee|one [a].mp4', "tee two's.mkv"],
      opts: { ...single, outputAliases: new Set(['out_1', 'out_2']) },
      check: async (cwd) => assert.deepEqual(await streamTypes(cwd, "tee two's.mkv"), ['video']),
    },
    {
      command: `-i {{in_1}} -filter_complex "[0:v]drawtext=text='LEVEL\\: 3':fontsize=42[v]" -map "[v]" -frames:v 1 {{out_1}}`,
      files: { ...inputs, out_1: 'level.png' },
      expect: ['level.png'],
    },
    {
      command: '-i {{in_1}} -vf "movie={{in_logo}}[wm];[in]lut3d={{in_cube}}[g];[g][wm]overlay=W-w-4:4[out]" -frames:v 1 {{out_1}}',
      files: { ...inputs, ...placed, out_1: 'logo.png' },
      expect: ['logo.png'],
      opts: withPlaced,
      setup: placeFixtures,
    },
    {
      command: '-dump_attachment:t:0 dumped.ttf -i {{in_1}} -f null -',
      files: { in_1: 'with-font.mkv' },
      expect: ['dumped.ttf'],
      setup: async (cwd) => {
        await run(
          'ffmpeg',
          [
            '-nostdin',
            '-v',
            'error',
            '-i',
            join(dir, 'clip.mkv'),
            '-attach',
            join(dir, 'font.ttf'),
            '-metadata:s:t',
            'mimetype=font/ttf',
            '-c',
            'copy',
            'with-font.mkv',
          ],
          { cwd },
        );
      },
    },
    {
      command: '-f concat -i list.txt -c copy {{out_1}}',
      files: { out_1: 'joined.mkv' },
      expect: ['joined.mkv'],
      setup: fromFixtures('clip.mkv', 'list.txt'),
    },
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
        '-ss 0.2 -t 0.5 -i {{in_1}} -vf "fps=5,scale=32:-2:flags=lanczos,split[s0][s1];[s0]palettegen[p];[s1][p]paletteuse" ' +
        '-loop 0 {{out_1}}',
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
      command:
        '-framerate 5 -start_number 1 -i frames/f_%03d.png -pattern_type glob -framerate 5 -i "frames/*.png" ' +
        '-map 0 {{out_1}} -map 1 {{out_2}}',
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

  for (const { command, files, expect, opts, setup, check } of cases) {
    test(command.slice(0, 100), async () => {
      // Each command runs in its own folder; folder-mode names are relative to it.
      const cwd = await mkdtemp(join(dir, 'run-'));
      await mkdir(join(cwd, 'hls'));
      await mkdir(join(cwd, 'frames'));
      await setup?.(cwd);
      const parsed = parseFfmpegCommand(command, opts ?? single);
      const argv = ['-v', 'error', ...argvOf(parsed, files)];
      await run('ffmpeg', argv, { cwd }).catch((error: { stderr: string }) => assert.fail(`${argv.join(' ')}\n${error.stderr}`));
      for (const name of expect) {
        const info = await stat(join(cwd, name)).catch(async () =>
          assert.fail(`${name} missing; the folder has ${(await readdir(cwd, { recursive: true })).join(', ')}`),
        );
        assert.ok(info.size > 0, `${name} is empty`);
      }
      await check?.(cwd);
    });
  }
});

test('relative names may hold spaces, accents and everyday punctuation, as files in a zip do', () => {
  const opts = { inputAliases: new Set<string>(), outputAliases: new Set(['out_1']) };
  for (const name of ['My Subs (FR).srt', 'vidéo 1.mp4', "it's [final] v2.mov", 'clips/Take #3, best!.mp4']) {
    const parsed = parseFfmpegCommand(`-i "${name.replaceAll('"', '\\"')}" {{out_1}}`, opts);
    assert.equal(parsed.inputs[0].target, name);
  }
  const glob = parseFfmpegCommand('-pattern_type glob -i "my frames/*.png" {{out_1}}', opts);
  assert.equal(glob.inputs[0].target, 'my frames/*.png');
});
