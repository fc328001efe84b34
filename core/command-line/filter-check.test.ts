import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { allowedFilterNames, checkFiltergraph, checkedFilterOptions } from './filter-check.ts';
import { FILTER_OPTION_ORDER } from './filter-option-order.ts';
import { ffmpeg, ffmpegStdout, inBatches } from './testing/ffmpeg-test-support.ts';
import { CommandRejected } from './parsed-command.ts';
import { markPlaceholders } from './placeholders.ts';

/** A graph with placeholders {{in_0}}, {{in_1}}... (numbers, in order from 0) turned into marks. */
const marked = (...parts: (string | number)[]): string =>
  markPlaceholders(parts.map((part) => (typeof part === 'number' ? { alias: `in_${part}` } : part)));

function refusal(graph: string): string {
  try {
    checkFiltergraph(graph, '-vf');
  } catch (error) {
    assert.ok(error instanceof CommandRejected, `${graph}: ${String(error)}`);
    return error.message;
  }
  assert.fail(`accepted: ${graph}`);
}

describe('checkFiltergraph', () => {
  test('accepts common graphs, and filters that read files given placeholders or relative names', () => {
    for (const graph of [
      'scale=1280:-2,fps=30,format=yuv420p',
      "drawtext=text='Hello, world':x=(w-text_w)/2:y=h-40:fontsize=24:fontcolor=white:font=DejaVu Sans",
      '[0:v][1:v]overlay=W-w-10:10[v];[0:a]volume=0.5,aresample=44100[a]',
      'split[a][b];[a]palettegen[p];[b][p]paletteuse',
      'curves=vintage',
      'curves=vintage:0/0 1/1',
      'curves=psfile=grade.acv',
      'color=c=red:s=320x240:d=1',
      'anullsrc=r=44100:cl=stereo',
      "select='eq(pict_type,I)',scale=160:-1,tile=4x4",
      'loudnorm=I=-16:TP=-1.5:LRA=11',
      'trim=start=1:end=3,setpts=PTS-STARTPTS',
      String.raw`drawtext=text='LEVEL\: 3':fontsize=42`,
      'drawtext=fontfile=fonts/Poppins-Regular.ttf:text=Hi',
      'drawtext=font.ttf:Hello',
      'drawtext=text=notes:textfile=notes.txt:reload=1',
      "subtitles=subs.srt:force_style='Fontsize=24,PrimaryColour=&H0000ff&'",
      "subtitles=sample.srt:fontsdir=.:force_style='FontName=Poppins'",
      'ass=subs.ass:fontsdir=fonts',
      'movie=logo.png[wm];[in][wm]overlay=10:10[out]',
      'movie=clip.mkv:f=matroska:s=dv+da',
      'amovie=tone.wav',
      'lut3d=grade.cube',
      'lut1d=file=ramp.cube:interp=cosine',
      marked('subtitles=', 0),
      marked("subtitles='", 0, "':force_style='Fontsize=24'"),
      marked('drawtext=fontfile=', 0, ":text='", 1, "'"),
      marked('drawtext=', 0, ':Hello'),
      marked('movie=', 0, '[wm];[in][wm]overlay'),
      marked('lut3d=file=', 0),
    ]) {
      assert.doesNotThrow(() => checkFiltergraph(graph, '-vf'), graph);
    }
  });

  test('reports the quoting levels of each placeholder', () => {
    const { graph } = checkFiltergraph(marked("subtitles='", 0, "':force_style=x,drawtext=fontfile=", 1), '-vf');
    assert.deepEqual(graph?.placeholderLevels, [
      ['quoted', 'bare'],
      ['bare', 'bare'],
    ]);
  });

  const cases: [string, string][] = [
    // filters that load code, use devices or the network, or write files
    ['ladspa=file=x', 'filter "ladspa" is not allowed in -vf (it loads plugins)'],
    ['lv2=p=http://x', 'filter "lv2" is not allowed'],
    ['frei0r=distort0r', 'filter "frei0r" is not allowed'],
    ['dnn_processing=model=x', 'filter "dnn_processing" is not allowed in -vf (it loads model files)'],
    ['arnndn=m=model.rnnn', 'filter "arnndn" is not allowed in -vf (it loads model files)'],
    ['sendcmd=f=cmds.txt', 'filter "sendcmd" is not allowed'],
    ['zmq', 'filter "zmq" is not allowed in -vf (it opens network sockets)'],
    ['scale_cuda=1:1', 'hardware devices'],
    ['hwupload', 'hardware devices'],
    ['sofalizer=sofa=x', 'filter "sofalizer" is not allowed'],
    ['vidstabdetect', 'filter "vidstabdetect" is not allowed'],
    ['psnr=stats_file=x', 'filter "psnr" is not allowed'],
    ['tmidequalizer', 'filter "tmidequalizer" in -vf is not allowed'],
    ['nosuchfilter,movie=/etc/passwd', 'option "filename" of filter "movie"'],
    ['movie=/etc/passwd[]', 'option "filename" of filter "movie"'],
    ["'lad'spa=x", 'filter "ladspa" is not allowed'],
    [String.raw`lad\spa=x`, 'filter "ladspa" is not allowed'],
    ['ladspa@x=x', 'filter "ladspa" is not allowed'],
    // files outside the working folder, however the value is written or positioned
    ['movie=/etc/passwd', 'option "filename" of filter "movie" in -vf "/etc/passwd": absolute paths are not allowed'],
    [String.raw`movie='http\://example.com/x.mp4'`, 'protocols (like file:, http:, concat:)'],
    [String.raw`movie=file\\\:x.mp4`, 'protocols'],
    ['subtitles=../x.srt', 'option "filename" of filter "subtitles" in -vf "../x.srt": ".." is not allowed'],
    ['subtitles=f=/etc/passwd', 'option "f" of filter "subtitles"'],
    [String.raw`subtitles='concat\:a.srt|b.srt'`, 'protocols'],
    ['subtitles=x.srt:fontsdir=/usr/share/fonts/../..', 'option "fontsdir" of filter "subtitles" in -vf "/usr/share/fonts/../..": "."'],
    ['subtitles=x.srt:fontsdir=/usr/share/fontsX', 'outside the font folders'],
    ['subtitles=x.srt:fontsdir=/proc/self/root/usr/share/fonts', 'outside the font folders'],
    ['drawtext=fontfile=/usr/share/fonts/../../../etc/passwd:text=x', '"." and ".." are not allowed'],
    ['drawtext=fontfile=/usr/share/fonts//x.ttf:text=x', 'empty folder names'],
    ['drawtext=fontfile=/usr/share/fonts:text=x', 'outside the font folders'],
    ['drawtext=textfile=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf', 'option "textfile" of filter "drawtext"'],
    ['subtitles=x.srt:64x64:/etc', 'option "fontsdir" of filter "subtitles"'],
    ['ass=x.ass:fontsdir=..', '".." is not allowed'],
    ['amovie=/dev/zero', 'option "filename" of filter "amovie"'],
    ['lut3d=/etc/x.cube', 'option "file" of filter "lut3d"'],
    ['lut1d=file=~/x.cube', '"~" is not allowed'],
    ['drawtext=fontfile=/etc/passwd:text=x', 'option "fontfile" of filter "drawtext" in -vf "/etc/passwd": it is outside the font folders'],
    ['drawtext=textfile=/proc/self/environ', 'option "textfile" of filter "drawtext"'],
    ['drawtext=/etc/x.ttf:hello', 'option "fontfile" of filter "drawtext"'],
    ['drawtext=text=hello:/etc/passwd', 'option "textfile" of filter "drawtext" in -vf "/etc/passwd"'],
    ['drawtext=text=a:enable=1:/etc/x.ttf', 'option "fontfile" of filter "drawtext"'],
    ['drawtext=text=x:font=/etc/x.ttf', 'font takes a font family name'],
    ["drawtext=text=x:font='Sans\\:file=/etc/x.ttf'", 'font takes a font family name'],
    ['curves=all=0/0 1/1:/etc/x.acv', 'option "psfile" of filter "curves"'],
    ['curves=plot=x.plt', 'option "plot" of filter "curves" in -vf is not allowed (it writes a file)'],
    ['curves=all=0/0 1/1:x.acv:x.plt', 'option "plot" of filter "curves"'],
    ['paletteuse=alpha_threshold=128:0:x.dot', 'option "debug_kdtree" of filter "paletteuse"'],
    ['paletteuse=debug_kdtree=x.dot', 'option "debug_kdtree" of filter "paletteuse"'],
    ['drawtext=/text=notes.txt', 'option "/text" of filter "drawtext" in -vf is not allowed (it reads a file)'],
    // movie cannot switch formats or options that the service does not check
    ['movie=x.mkv:f=lavfi', 'format lavfi would run a filtergraph'],
    ['movie=x.mkv:f=LaVfi', 'format lavfi would run a filtergraph'],
    ['movie=x.m3u8:f=hls', 'format hls is not allowed'],
    ['movie=x:f=x11grab', 'format x11grab is not allowed (it is a capture or playback device)'],
    ['movie=x.mp4:format_opts=protocol_whitelist=http', 'option "format_opts" of filter "movie" in -vf is not allowed'],
    [String.raw`movie=x.mp4:mp4:0:0:dv:1:0:0:protocol_whitelist\\=http`, 'option "format_opts" of filter "movie"'],
    // placeholders
    [marked('subtitles=x', 0), 'option "filename" of filter "subtitles" in -vf must be a placeholder alone'],
    [marked('drawtext=fontfile=', 0, '/../x'), 'must be a placeholder alone'],
    [marked('subtitles=x.srt:fontsdir=', 0), 'option "fontsdir" of filter "subtitles" in -vf names a folder'],
    [marked('movie=x.mkv:f=', 0), 'f takes a format name'],
    [marked('drawtext=text=x:font=', 0), 'font takes a font family name'],
    [marked(0, '=x'), 'a placeholder cannot stand in a filter name'],
    [marked('scale[', 0, ']'), 'cannot stand in a link label'],
  ];
  for (const [graph, fragment] of cases) {
    test(`refuses ${graph.replace(/[\udc00-\udfff]/g, '{{in}}')}`, () => {
      const message = refusal(graph);
      assert.ok(message.includes(fragment), `message was: ${message}`);
    });
  }

  test('accepts system fonts by their path in the font folders', () => {
    for (const graph of [
      'drawtext=fontfile=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf:text=Hi',
      "drawtext=fontfile='/usr/local/share/fonts/My Font (Bold).ttf':text=Hi",
      'drawtext=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf:Hi',
      'subtitles=x.srt:fontsdir=/usr/share/fonts',
      'ass=x.ass:fontsdir=/usr/share/fonts/truetype/',
    ]) {
      assert.deepEqual(checkFiltergraph(graph, '-vf').ffmpegFailure, null, graph);
    }
  });
});

// What only ffmpeg judges: the graph is accepted, with the message ffmpeg gives when it creates it.
const FFMPEG_FAILURES: [string, string][] = [
  ['nosuchfilter', "No such filter: 'nosuchfilter'"],
  ['scale=64:64,nosuchfilter,alsonot', "No such filter: 'nosuchfilter'"],
  ['scale=1:1,', "No such filter: ''"],
  ['[]scale=1:1', 'Bad (empty?) label found in the following: "[]scale=1:1".'],
  ['scale=1:1[out', `Mismatched '[' found in the following: "[out".`],
  ['scale=1:1 ] x', 'Unable to parse graph description substring: "] x"'],
  ['sws_flags=bicubic scale=2:2', "sws_flags not terminated with ';'."],
  ['subtitles=a.srt:64x64:.:0:utf8:0:x:extra', "No option name near 'extra'"],
  // A client's drawtext whose quotes do not pair: the comma in gte(t,1) ends the filter.
  ["drawtext=text='it's':fontsize=24:enable='gte(t,1)'", "Error when evaluating the expression 'gte(t' for enable"],
];

describe('what ffmpeg judges', () => {
  for (const [graph, message] of FFMPEG_FAILURES) {
    test(`${graph}: ${message}`, () => {
      assert.equal(checkFiltergraph(graph, '-vf').ffmpegFailure, message);
    });
  }
});

describe('against the real ffmpeg', () => {
  test('ffmpeg prints the message the checker gives for a graph it cannot create', async () => {
    for (const [graph, message] of FFMPEG_FAILURES) {
      const { code, stderr } = await ffmpeg(['-f', 'lavfi', '-i', 'nullsrc=s=64x64:d=0.1', '-vf', graph, '-f', 'null', '-']);
      assert.notEqual(code, 0, graph);
      assert.ok(stderr.includes(message), `${graph}: ffmpeg printed ${stderr.slice(-600)}`);
    }
  });

  test('every allowed filter exists', async () => {
    const listing = await ffmpegStdout(['-filters']);
    const known = new Set(
      listing
        .split('\n')
        .map((line) => line.trim().split(/\s+/)[1])
        .filter(Boolean),
    );
    const missing = allowedFilterNames().filter((name) => !known.has(name));
    assert.deepEqual(missing, []);
  });

  // Options whose name or help text suggests a file but that were reviewed and open nothing.
  const REVIEWED_HARMLESS = new Set([
    'loudnorm.measured_I',
    'loudnorm.measured_i',
    'loudnorm.measured_LRA',
    'loudnorm.measured_lra',
    'loudnorm.measured_TP',
    'loudnorm.measured_tp',
    'loudnorm.measured_thresh',
    'ebur128.dualmono',
    'ebur128.panlaw',
    'drawtext.reload',
    'drawtext.font',
    'drawtext.ft_load_flags',
    'tmix.weights',
    'mix.weights',
    'amix.weights',
    'paletteuse.debug_accuracy',
    'bs2b.profile',
  ]);
  const FILE_LIKE_NAME = /file|path|dump|plot|debug_|model|weights|script/i;
  const FILE_LIKE_HELP = /\bfiles?\b|file ?name|\bpath\b|director(y|ies)|\bscript\b|\bmodel\b|\bload|\bopened\b/i;

  test('every allowed filter option that opens a file is checked as a file, a folder, or refused', async () => {
    const unexpected: string[] = [];
    await inBatches(allowedFilterNames(), 16, async (name) => {
      const help = await ffmpegStdout(['-h', `filter=${name}`]);
      const checked = checkedFilterOptions(name);
      const handled = new Set([...checked.readsFile, ...checked.readsFolder, ...checked.refused]);
      for (const line of help.split('\n').filter((l) => /^ {3}[A-Za-z0-9_]/.test(l))) {
        const [, option, , helpText = ''] = /^ {3}(\S+)\s+(<\w+>)?\s*\S*\s*(.*)$/.exec(line) ?? [];
        const fileLike = FILE_LIKE_NAME.test(option) || FILE_LIKE_HELP.test(helpText);
        if (fileLike && !handled.has(option) && !REVIEWED_HARMLESS.has(`${name}.${option}`)) {
          unexpected.push(`${name}.${option}: ${helpText}`);
        }
      }
      // A keyless value could reach any of these, so the checker must know the option order.
      if (handled.size > 0) assert.ok(FILTER_OPTION_ORDER[name], `${name} needs an entry in FILTER_OPTION_ORDER`);
    });
    assert.deepEqual(unexpected, []);
  });
});
