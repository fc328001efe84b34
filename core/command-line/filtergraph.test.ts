import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FILTER_OPTION_ORDER, optionNames } from './filter-option-order.ts';
import { ffmpeg, inBatches, loggedSettings, makeMediaFixtures } from './testing/ffmpeg-test-support.ts';
import { parseFiltergraph } from './filtergraph.ts';
import type { ParsedGraph } from './filtergraph.ts';
import { markPlaceholders } from './placeholders.ts';

describe('parseFiltergraph', () => {
  test('reads chains, labels, instances and options', () => {
    const { filters } = parseFiltergraph('[0:v] scale=w=iw/2:h=-2 [a]; [a][1:v]overlay@logo=10:20:format=auto,format=yuv420p[out]');
    assert.deepEqual(filters, [
      {
        name: 'scale',
        args: [
          { key: 'w', value: 'iw/2' },
          { key: 'h', value: '-2' },
        ],
        inputLabels: ['0:v'],
        outputLabels: ['a'],
      },
      {
        name: 'overlay',
        instance: 'logo',
        args: [{ value: '10' }, { value: '20' }, { key: 'format', value: 'auto' }],
        inputLabels: ['a', '1:v'],
        outputLabels: [],
      },
      { name: 'format', args: [{ value: 'yuv420p' }], inputLabels: [], outputLabels: ['out'] },
    ]);
  });

  test('removes quoting and escaping at both levels, as ffmpeg does', () => {
    const [filter] = parseFiltergraph(String.raw`'draw'te\xt=text='a\:b, c':x=1`).filters;
    assert.equal(filter.name, 'drawtext');
    assert.deepEqual(filter.args, [
      { key: 'text', value: 'a:b, c' },
      { key: 'x', value: '1' },
    ]);
    const [escaped] = parseFiltergraph(String.raw`drawtext=text=a\\\:b`).filters;
    assert.deepEqual(escaped.args, [{ key: 'text', value: 'a:b' }]);
  });

  test('skips a leading sws_flags directive', () => {
    const { filters } = parseFiltergraph('sws_flags=bicubic;scale=64:64');
    assert.deepEqual(
      filters.map((f) => f.name),
      ['scale'],
    );
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
      assert.throws(
        () => parseFiltergraph(graph),
        (e: Error) => e.message.includes(fragment),
        graph,
      );
    }
  });

  // Text with placeholders (numbers, in order from 0) turned into their marks.
  const marked = (...parts: (string | number)[]): string =>
    markPlaceholders(parts.map((part) => (typeof part === 'number' ? { alias: `in_${part}` } : part)));
  const mark = (i: number): string => marked(...Array.from({ length: i + 1 }, (_, j) => j)).at(-1)!;

  test('reports how each level quotes a placeholder', () => {
    const graph = parseFiltergraph(
      marked('subtitles=', 0, ":force_style='x',drawtext=text='", 1, "':x=1,drawtext=text=\\'", 2, "\\',movie=\\''", 3, "'\\'"),
    );
    assert.deepEqual(graph.placeholderLevels, [
      ['bare', 'bare'],
      ['quoted', 'bare'],
      ['bare', 'quoted'],
      ['quoted', 'quoted'],
    ]);
    assert.deepEqual(
      graph.filters.map((f) => f.args[0].value),
      [mark(0), mark(1), mark(2), mark(3)],
    );
  });

  test('a placeholder keeps the structure: it is never a key, and spaces around it are trimmed', () => {
    const graph = parseFiltergraph(marked('drawtext=ab', 0, '=x: ', 1, ' '));
    assert.deepEqual(graph.filters[0].args, [{ value: `ab${mark(0)}=x` }, { value: mark(1) }]);
  });

  test('refuses placeholders outside option values, after a backslash, or in a quote left open', () => {
    for (const [graph, fragment] of [
      [marked(0, '=x'), 'cannot stand in a filter name'],
      [marked('[', 0, ']scale'), 'cannot stand in a link label'],
      [marked('scale[', 0, ']'), 'cannot stand in a link label'],
      [marked('subtitles=\\', 0), 'cannot follow a backslash'],
      [marked('subtitles=\\\\\\', 0), 'cannot follow a backslash'],
      [marked("subtitles='", 0), 'never closed'],
      [marked("subtitles=\\'", 0), 'never closed'],
    ]) {
      assert.throws(
        () => parseFiltergraph(graph),
        (e: Error) => e.message.includes(fragment),
        graph,
      );
    }
  });
});

/**
 * What ffmpeg should log for a parsed graph: every value under its filter instance, with the option
 * name when it is known (written, or from the option order of filters with file options).
 */
function expectedSettings({ filters }: ParsedGraph): { filter: string; key?: string; value: string }[] {
  return filters.flatMap((filter, index) => {
    const label = filter.instance ? `${filter.name}@${filter.instance}` : `Parsed_${filter.name}_${index}`;
    const order = FILTER_OPTION_ORDER[filter.name];
    const keys = order ? optionNames(order, filter.args) : filter.args.map((arg) => arg.key);
    return filter.args.map((arg, i) => ({ filter: label, key: keys[i], value: arg.value }));
  });
}

type RunAs = 'vf' | 'af' | 'fc' | 'lavfi';

// Graphs from FFmpeg's filters documentation (including "Notes on filtergraph escaping"), Rendi's
// documentation and everyday commands. Files they name are made by makeMediaFixtures.
const CORPUS: { graph: string; as: RunAs; maps?: string[] }[] = [
  // geometry, timing, colour
  { graph: 'scale=iw/2:-1', as: 'vf' },
  { graph: 'scale=128:72:force_original_aspect_ratio=decrease,pad=128:72:(ow-iw)/2:(oh-ih)/2', as: 'vf' },
  { graph: 'crop=in_w/2:in_h/2:(in_w-out_w)/2:(in_h-out_h)/2', as: 'vf' },
  { graph: 'pad=width=96:height=96:x=(ow-iw)/2:y=(oh-ih)/2:color=black', as: 'vf' },
  { graph: ' scale = w = 32 : h = 32 , hflip ', as: 'vf' },
  { graph: String.raw`scale=w='min(32\,iw)':h=-2`, as: 'vf' },
  { graph: 'eq=brightness=0.06:saturation=2', as: 'vf' },
  { graph: "hue='H=2*PI*t:s=sin(2*PI*t)+1'", as: 'vf' },
  { graph: 'fade=t=in:st=0:d=0.5,fade=t=out:st=0.5:d=0.5', as: 'vf' },
  { graph: 'setpts=0.5*PTS', as: 'vf' },
  { graph: 'drawbox=x=10:y=10:w=20:h=20:color=red@0.5:t=fill', as: 'vf' },
  { graph: "drawbox@my=x=1:y='2':color='red@0.5',drawbox=color=blue\\@0.5:t=fill", as: 'vf' },
  { graph: String.raw`select='eq(pict_type\,I)'`, as: 'vf' },
  { graph: "select='eq(pict_type,I)',scale=16:-1,tile=2x2", as: 'vf' },
  { graph: 'split[main][tmp];[tmp]crop=iw:ih/2:0:0,vflip[flip];[main][flip]overlay=0:H/2', as: 'vf' },
  { graph: 'curves=vintage', as: 'vf' },
  { graph: 'curves=preset=vintage', as: 'vf' },
  { graph: "curves=r='0/0.11 .42/.51 1/0.95':g='0/0 0.50/0.48 1/1':b='0/0.22 .49/.44 1/0.8'", as: 'vf' },
  { graph: 'curves=psfile=curves.acv', as: 'vf' },
  { graph: 'curves=all=0/0 1/1:curves.acv', as: 'vf' },
  { graph: 'lut3d=grade.cube', as: 'vf' },
  { graph: 'lut3d=file=grade.cube:interp=trilinear', as: 'vf' },
  { graph: 'lut1d=ramp.cube:cosine', as: 'vf' },
  { graph: 'split[a][b];[a]palettegen[p];[b][p]paletteuse=bayer:2', as: 'vf' },
  // drawtext: quoting and escaping of text at both levels
  { graph: "drawtext=text='Test Text':fontsize=24:x=(w-text_w)/2:y=(h-text_h)/2", as: 'vf' },
  {
    graph:
      "drawtext=fontfile=font.ttf:text='Hello World':fontcolor=white:fontsize=24:box=1:boxcolor=black@0.5:boxborderw=5:" +
      'x=(w-text_w)/2:y=(h-text_h)/2',
    as: 'vf',
  },
  { graph: String.raw`drawtext=text=this is a \\\'string\\\'\\: may contain one\, or more\, special characters`, as: 'vf' },
  { graph: String.raw`[0:v]drawtext=text='LEVEL\: 3':fontsize=42[v]`, as: 'fc', maps: ['[v]'] },
  { graph: String.raw`drawtext=text='%{pts\:hms}':x=2:y=2`, as: 'vf' },
  { graph: String.raw`drawtext=fontfile=font.ttf:text='%{localtime\:%a %b %d %Y}'`, as: 'vf' },
  { graph: String.raw`[0:v]drawtext=text='%{eif\:n\:d}':x=5:y=5[v]`, as: 'fc', maps: ['[v]', '0:a'] },
  { graph: String.raw`drawtext=text=it\\\'s 10\\\:00:x=1:y=1:fontsize=8`, as: 'vf' },
  { graph: String.raw`drawtext=text=a\\\:b\, c  :x=(w-text_w)/2`, as: 'vf' },
  { graph: String.raw`drawtext=text=' spaced '\ :x=2`, as: 'vf' },
  { graph: String.raw`drawtext=text='I'\''m here'`, as: 'vf' },
  { graph: "drawtext=text='Hello, world':x=(w-text_w)/2", as: 'vf' },
  { graph: 'drawtext=font.ttf:Hi:x=5:10:2', as: 'vf' },
  { graph: 'drawtext=text=a:enable=1:font.ttf', as: 'vf' },
  // subtitles, fonts
  { graph: 'subtitles=subs.srt', as: 'vf' },
  { graph: "subtitles=subs.srt:force_style='Fontsize=24,PrimaryColour=&H0000ff&'", as: 'vf' },
  { graph: "subtitles='subs.srt':force_style='FontName=DejaVu Sans,Fontsize=24'", as: 'vf' },
  { graph: 'subtitles=subs.ass:fontsdir=.', as: 'vf' },
  { graph: 'subtitles=subs.srt:64x64:.', as: 'vf' },
  { graph: 'subtitles=filename=clip.mkv:si=0', as: 'vf' },
  { graph: 'ass=subs.ass:shaping=simple', as: 'vf' },
  // movie sources and compositions
  { graph: 'movie=logo.png[wm];[in][wm]overlay=10:10[out]', as: 'vf' },
  { graph: 'movie=clip.mkv:si=0:sp=0.1,scale=32:32[m];[0:v][m]overlay', as: 'fc' },
  { graph: 'movie=clip.mkv:s=dv+da[out0][out1]', as: 'lavfi' },
  { graph: 'amovie=tone.wav[a];[0:a][a]amix=inputs=2', as: 'fc' },
  { graph: '[0:v][1:v]overlay=W-w-10:10', as: 'fc' },
  { graph: '[0:v]scale=32:-2[bg];[1:v]scale=16:16[fg];[bg][fg]overlay=x=(W-w)/2:y=(H-h)/2:format=auto,format=yuv420p', as: 'fc' },
  { graph: '[0:v]split=2[a][b];[a]hflip[a1];[b]vflip[b1];[a1][b1]hstack=inputs=2', as: 'fc' },
  { graph: '[0:v][0:a][1:v][1:a]concat=n=2:v=1:a=1[v][a]', as: 'fc', maps: ['[v]', '[a]'] },
  {
    graph: '[0:v]trim=start=0.1:end=0.5,setpts=PTS-STARTPTS[v];[0:a]atrim=start=0.1:end=0.5,asetpts=PTS-STARTPTS[a]',
    as: 'fc',
    maps: ['[v]', '[a]'],
  },
  // audio
  { graph: 'atempo=2.0', as: 'af' },
  { graph: 'loudnorm=I=-16:TP=-1.5:LRA=11', as: 'af' },
  { graph: 'afade=t=in:ss=0:d=0.5,volume=volume=0.5:precision=float', as: 'af' },
  { graph: "aformat=sample_fmts=fltp:channel_layouts='mono',aresample=22050", as: 'af' },
  // sources
  { graph: 'color=c=red@0.5:s=64x64:d=0.1', as: 'lavfi' },
  { graph: String.raw`color=c=0x00ff00:s=16x16:d=0.1[a];[a] setpts = 'PTS-STARTPTS' [b] ; [b]null`, as: 'lavfi' },
  { graph: "color=s=16x16:d=0.1,select='eq(n\\,0)+eq(n\\,1)',scale=w='min(8\\,iw)':h=-2", as: 'lavfi' },
];

function argsFor({ graph, as, maps }: (typeof CORPUS)[number]): string[] {
  const tail = ['-t', '0.5', '-sn', '-f', 'null', '-'];
  switch (as) {
    case 'vf':
      return ['-i', 'clip.mkv', '-vf', graph, '-an', ...tail];
    case 'af':
      return ['-i', 'clip.mkv', '-af', graph, '-vn', ...tail];
    case 'fc':
      return ['-i', 'clip.mkv', '-i', 'clip.mkv', '-filter_complex', graph, ...(maps ?? []).flatMap((m) => ['-map', m]), ...tail];
    case 'lavfi':
      return ['-f', 'lavfi', '-i', graph, ...tail];
  }
}

describe('the parser reads graphs exactly as the real ffmpeg does', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'filtergraph-test-'));
    await makeMediaFixtures(dir);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test(`a corpus of ${CORPUS.length} graphs: same filters, same option names and values, in order`, async () => {
    const problems: string[] = [];
    await inBatches(CORPUS, 8, async (entry) => {
      const { code, stderr } = await ffmpeg(['-v', 'repeat+debug', ...argsFor(entry)], dir);
      if (code !== 0) {
        problems.push(
          `${entry.graph}: ffmpeg failed\n${stderr
            .split('\n')
            .filter((l) => /rror|nvalid/.test(l))
            .join('\n')}`,
        );
        return;
      }
      const logged = loggedSettings(stderr);
      const expected = expectedSettings(parseFiltergraph(entry.graph));
      // A keyless value of a filter without an option table is compared by value only.
      const show = (s: { filter: string; key?: string; value: string }, i: number): string =>
        `${s.filter} ${expected[i]?.key === undefined ? '?' : s.key}=${s.value}`;
      const ours = expected.map(show);
      const theirs = logged.map(show);
      if (JSON.stringify(ours) !== JSON.stringify(theirs)) {
        problems.push(`${entry.graph}\n  ours:   ${ours.join(' | ')}\n  ffmpeg: ${theirs.join(' | ')}`);
      }
    });
    assert.deepEqual(problems, []);
  });
});
