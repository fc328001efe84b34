import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  allowedFilterNames,
  checkFiltergraph,
  maxPositionalValues,
  parseFiltergraph,
  refusedFilterOptions,
} from './filtergraph.ts';
import type { FilterInstance } from './filtergraph.ts';
import { CommandRejected } from './parsed-command.ts';

const run = promisify(execFile);

/** Runs ffmpeg and returns its stderr, whatever the exit status. */
async function ffmpegStderr(args: string[]): Promise<string> {
  try {
    const { stderr } = await run('ffmpeg', ['-hide_banner', '-nostdin', ...args], { maxBuffer: 32 << 20 });
    return stderr;
  } catch (error) {
    return (error as { stderr: string }).stderr;
  }
}

async function ffmpegStdout(args: string[]): Promise<string> {
  const { stdout } = await run('ffmpeg', ['-hide_banner', ...args], { maxBuffer: 32 << 20 });
  return stdout;
}

/** Runs `work` over items, `width` at a time. */
async function inBatches<T>(items: T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(work));
}

describe('parseFiltergraph', () => {
  test('reads chains, labels, instances and options', () => {
    const filters = parseFiltergraph('[0:v] scale=w=iw/2:h=-2 [a]; [a][1:v]overlay@logo=10:20:format=auto,format=yuv420p[out]');
    assert.deepEqual(filters, [
      {
        name: 'scale',
        options: { w: 'iw/2', h: '-2' },
        positional: [],
        args: [{ key: 'w', value: 'iw/2' }, { key: 'h', value: '-2' }],
        inputLabels: ['0:v'],
        outputLabels: ['a'],
      },
      {
        name: 'overlay',
        instance: 'logo',
        options: { format: 'auto' },
        positional: ['10', '20'],
        args: [{ value: '10' }, { value: '20' }, { key: 'format', value: 'auto' }],
        inputLabels: ['a', '1:v'],
        outputLabels: [],
      },
      {
        name: 'format',
        options: {},
        positional: ['yuv420p'],
        args: [{ value: 'yuv420p' }],
        inputLabels: [],
        outputLabels: ['out'],
      },
    ]);
  });

  test('removes quoting and escaping at both levels, as ffmpeg does', () => {
    const [filter] = parseFiltergraph(String.raw`'draw'te\xt=text='a\:b, c':x=1`);
    assert.equal(filter.name, 'drawtext');
    assert.deepEqual(filter.options, { text: 'a:b, c', x: '1' });
    const [escaped] = parseFiltergraph(String.raw`drawtext=text=a\\\:b`);
    assert.deepEqual(escaped.options, { text: 'a:b' });
  });

  test('skips a leading sws_flags directive', () => {
    const filters = parseFiltergraph('sws_flags=bicubic;scale=64:64');
    assert.deepEqual(filters.map((f) => f.name), ['scale']);
  });

  test('refuses malformed graphs', () => {
    for (const [graph, fragment] of [
      ['scale=1:1,', 'missing filter name'],
      ['[]scale', 'empty link label'],
      ['[a scale', "unclosed '['"],
      ['scale[a] x', 'cannot parse the graph'],
      ['scale==1', 'empty name'],
      ['sws_flags=bicubic', 'not terminated'],
    ]) {
      assert.throws(() => parseFiltergraph(graph), (e: Error) => e.message.includes(fragment), graph);
    }
  });
});

describe('checkFiltergraph', () => {
  test('accepts common graphs', () => {
    for (const graph of [
      'scale=1280:-2,fps=30,format=yuv420p',
      "drawtext=text='Hello, world':x=(w-text_w)/2:y=h-40:fontsize=24:fontcolor=white:font=DejaVu Sans",
      '[0:v][1:v]overlay=W-w-10:10[v];[0:a]volume=0.5,aresample=44100[a]',
      'split[a][b];[a]palettegen[p];[b][p]paletteuse',
      'curves=vintage',
      'color=c=red:s=320x240:d=1',
      'anullsrc=r=44100:cl=stereo',
      "select='eq(pict_type,I)',scale=160:-1,tile=4x4",
      'loudnorm=I=-16:TP=-1.5:LRA=11',
      'trim=start=1:end=3,setpts=PTS-STARTPTS',
    ]) {
      assert.doesNotThrow(() => checkFiltergraph(graph, '-vf'), graph);
    }
  });

  test('refuses filters that open files, devices or plugins, however they are spelled', () => {
    const cases: [string, string][] = [
      ['movie=/etc/passwd', 'filter "movie" is not allowed in -vf (it reads files)'],
      ["'mo'vie=x.mp4", 'filter "movie" is not allowed'],
      [String.raw`mo\vie=x.mp4`, 'filter "movie" is not allowed'],
      ['movie@m=x.mp4', 'filter "movie" is not allowed'],
      ['[0:v]null[a];amovie=x.wav', 'filter "amovie" is not allowed'],
      ['subtitles=subs.srt', 'filter "subtitles" is not allowed in -vf (it reads files)'],
      ['ass=subs.ass', 'filter "ass" is not allowed'],
      ['sendcmd=f=cmds.txt', 'filter "sendcmd" is not allowed'],
      ['zmq', 'filter "zmq" is not allowed in -vf (it opens network sockets)'],
      ['ladspa=file=x', 'filter "ladspa" is not allowed'],
      ['dnn_processing=model=x', 'filter "dnn_processing" is not allowed in -vf (it loads model files)'],
      ['scale_cuda=1:1', 'hardware devices'],
      ['hwupload', 'hardware devices'],
      ['lut3d=file=x.cube', 'filter "lut3d" is not allowed'],
      ['sofalizer=sofa=x', 'filter "sofalizer" is not allowed'],
      ['vidstabdetect', 'filter "vidstabdetect" is not allowed'],
      ['psnr=stats_file=x', 'filter "psnr" is not allowed'],
      ['nosuchfilter', 'filter "nosuchfilter" in -vf is unknown or not allowed'],
      ['drawtext=fontfile=/etc/passwd:text=x', 'option "fontfile" of filter "drawtext" in -vf is not allowed'],
      ['drawtext=textfile=notes.txt', 'option "textfile" of filter "drawtext"'],
      ['drawtext=font.ttf:hello', 'filter "drawtext" in -vf takes key=value options only'],
      ['drawtext=text=x:font=/etc/x.ttf', 'font takes a font family name'],
      ['drawtext=/text=notes.txt', 'option "/text" of filter "drawtext" in -vf is not allowed (it reads a file)'],
      ['curves=psfile=x.acv', 'option "psfile" of filter "curves"'],
      ['curves=plot=x.plt', 'option "plot" of filter "curves"'],
      ['curves=vintage:0/0 1/1', 'takes at most 1 value(s) without a key'],
      ['drawtext=text=hello:/etc/passwd', 'a value without a key after key=value options is not allowed'],
      ['curves=all=0/0 1/1:x.acv', 'a value without a key after key=value options is not allowed'],
      ['paletteuse=alpha_threshold=128:x.dot', 'a value without a key after key=value options'],
      ['paletteuse=debug_kdtree=x.dot', 'option "debug_kdtree" of filter "paletteuse"'],
      ['scale=1:1,', 'invalid filtergraph in -vf'],
    ];
    for (const [graph, fragment] of cases) {
      assert.throws(
        () => checkFiltergraph(graph, '-vf'),
        (e: Error) => e instanceof CommandRejected && e.message.includes(fragment),
        `${graph} should be refused with "${fragment}"`,
      );
    }
  });
});

describe('against the real ffmpeg', () => {
  test('every allowed filter exists', async () => {
    const listing = await ffmpegStdout(['-filters']);
    const known = new Set(listing.split('\n').map((line) => line.trim().split(/\s+/)[1]).filter(Boolean));
    const missing = allowedFilterNames().filter((name) => !known.has(name));
    assert.deepEqual(missing, []);
  });

  // Options whose name or help text suggests a file but that were reviewed and open nothing.
  const REVIEWED_HARMLESS = new Set([
    'loudnorm.measured_I', 'loudnorm.measured_i', 'loudnorm.measured_LRA', 'loudnorm.measured_lra',
    'loudnorm.measured_TP', 'loudnorm.measured_tp', 'loudnorm.measured_thresh', 'ebur128.dualmono',
    'ebur128.panlaw', 'drawtext.reload', 'drawtext.font', 'drawtext.ft_load_flags', 'tmix.weights', 'mix.weights',
    'amix.weights', 'paletteuse.debug_accuracy', 'bs2b.profile',
  ]);
  const FILE_LIKE_NAME = /file|path|dump|plot|debug_|model|weights|script/i;
  const FILE_LIKE_HELP = /\bfiles?\b|file ?name|\bpath\b|director(y|ies)|\bscript\b|\bmodel\b|\bload/i;

  test('no allowed filter has an option that opens a file, unless the checker refuses it', async () => {
    const unexpected: string[] = [];
    await inBatches(allowedFilterNames(), 16, async (name) => {
      const help = await ffmpegStdout(['-h', `filter=${name}`]);
      const optionLines = help.split('\n').filter((line) => /^ {3}[A-Za-z0-9_]/.test(line));
      const refused = new Set(refusedFilterOptions(name));
      const options = optionLines.map((line) => {
        const [, option, , helpText] = /^ {3}(\S+)\s+(<\w+>)?\s*\S*\s*(.*)$/.exec(line) ?? [];
        return { option, helpText: helpText ?? '' };
      });
      for (const { option, helpText } of options) {
        const fileLike = FILE_LIKE_NAME.test(option) || FILE_LIKE_HELP.test(helpText);
        if (fileLike && !refused.has(option) && !REVIEWED_HARMLESS.has(`${name}.${option}`)) {
          unexpected.push(`${name}.${option}: ${helpText}`);
        }
      }
      // Positional values map to options in declaration order (aliases share a line of help), so
      // the first allowed positions must not reach a refused option.
      const limit = maxPositionalValues(name);
      if (refused.size > 0) {
        assert.ok(Number.isFinite(limit), `${name} has refused options, so it must limit positional values`);
        const distinct: string[] = [];
        let lastHelp = '';
        for (const { option, helpText } of options) {
          if (helpText !== lastHelp) distinct.push(option);
          lastHelp = helpText;
        }
        const reachable = distinct.slice(0, limit);
        assert.deepEqual(reachable.filter((o) => refused.has(o)), [], `${name}: positional values reach a refused option`);
      }
    });
    assert.deepEqual(unexpected, []);
  });

  test('the parser reads options exactly as libavfilter does', async () => {
    // Each graph runs as a lavfi input with -v debug; ffmpeg logs "Setting 'key' to value 'v'" for
    // every option of every filter it creates, in order.
    const graphs = [
      "color=c=red: s = 16x16:d=0.1 , 'draw'box@my=x=1:y='2':color='red@0.5'",
      String.raw`color=red:16x16:d=0.1,drawbox=color=blue\@0.5:t=fill`,
      String.raw`color=c=0x00ff00:s=16x16:d=0.1[a];[a] setpts = 'PTS-STARTPTS' [b] ; [b]null`,
      String.raw`color=s=16x16:d=0.1,drawtext=text=it\\\'s 10\\\:00:x=1:y=1:fontsize=8`,
      'color=s=16x16:d=0.1,scale=h=10:20:bicubic,drawtext=x=5:10:2',
      String.raw`color=s=16x16:d=0.1,drawtext=text=a\\\:b\, c  :x=(w-text_w)/2`,
      String.raw`color=s=16x16:d=0.1,drawtext=text=' spaced '\ :x=2`,
      "color=s=16x16:d=0.1,select='eq(n\\,0)+eq(n\\,1)',scale=w='min(8\\,iw)':h=-2",
    ];
    for (const graph of graphs) {
      const stderr = await ffmpegStderr(['-v', 'debug', '-f', 'lavfi', '-i', graph, '-frames:v', '1', '-f', 'null', '-']);
      const logged = [...stderr.matchAll(/^\[(?:Parsed_(\w+)_\d+|(\w+)@\w+) @ 0x[0-9a-f]+\] Setting '([^']*)' to value '(.*)'$/gm)].map(
        (m) => `${m[1] ?? m[2]}: ${m[4]}`,
      );
      const parsed = parseFiltergraph(graph).flatMap((f: FilterInstance) =>
        f.args.map((arg) => `${f.name}: ${arg.value}`),
      );
      assert.deepEqual(parsed, logged, graph);
      const loggedKeys = [...stderr.matchAll(/^\[(?:Parsed_\w+_\d+|\w+@\w+) @ 0x[0-9a-f]+\] Setting '([^']*)'/gm)].map((m) => m[1]);
      parseFiltergraph(graph)
        .flatMap((f) => f.args)
        .forEach((arg, i) => {
          if (arg.key !== undefined) assert.equal(arg.key, loggedKeys[i], `${graph}: option ${i}`);
        });
    }
  });

  test('the keyless values a filter with refused options accepts never reach those options', async () => {
    // Valid sample values, since ffmpeg stops at the first value it cannot set.
    const samples: Record<string, string[]> = {
      curves: ['vintage'],
      paletteuse: ['bayer', '2', 'rectangle', '0', '128'],
    };
    for (const name of allowedFilterNames().filter((n) => refusedFilterOptions(n).length > 0)) {
      const limit = maxPositionalValues(name);
      if (limit === 0) continue;
      const values = samples[name];
      assert.equal(values?.length, limit, `add ${limit} sample values for ${name}`);
      const stderr = await ffmpegStderr(['-v', 'debug', '-f', 'lavfi', '-i', `color=s=16x16:d=0.1,${name}=${values.join(':')}`, '-f', 'null', '-']);
      const keys = [...stderr.matchAll(new RegExp(`^\\[Parsed_${name}_1 @ 0x[0-9a-f]+\\] Setting '([^']*)'`, 'gm'))].map((m) => m[1]);
      assert.equal(keys.length, limit, `${name}: ffmpeg set ${keys.join(', ')}`);
      assert.deepEqual(keys.filter((k) => refusedFilterOptions(name).includes(k)), [], name);
    }
  });
});
