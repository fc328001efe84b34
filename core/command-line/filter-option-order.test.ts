import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FILTER_OPTION_ORDER, KeylessValueError, optionNames } from './filter-option-order.ts';
import type { FilterArg } from './filtergraph.ts';
import { ffmpeg, ffmpegStdout, inBatches, loggedSettings } from './testing/ffmpeg-test-support.ts';

const FILTERS = Object.keys(FILTER_OPTION_ORDER);
const args = (...keys: (string | undefined)[]): FilterArg[] => keys.map((key) => ({ key, value: 'v' }));

describe('optionNames', () => {
  const drawtext = FILTER_OPTION_ORDER.drawtext;
  test('keyless values take the options in declaration order, aliases once', () => {
    assert.deepEqual(optionNames(FILTER_OPTION_ORDER.subtitles, args(undefined, undefined, undefined)), [
      'filename',
      'original_size',
      'fontsdir',
    ]);
    assert.deepEqual(optionNames(drawtext, args('basetime', undefined, undefined, undefined, undefined, undefined, undefined)), [
      'basetime',
      'font',
      'expansion',
      'timecode',
      'tc24hmax',
      'timecode_rate',
      'reload',
    ]);
  });
  test('after key=value, the next keyless value takes the option declared after that key', () => {
    assert.deepEqual(optionNames(drawtext, args('text', undefined)), ['text', 'textfile']);
    assert.deepEqual(optionNames(drawtext, args('fontsize', undefined)), ['fontsize', 'x']);
    assert.deepEqual(optionNames(drawtext, args('text', 'fontfile', undefined)), ['text', 'fontfile', 'text']);
  });
  test('after a key that is not one of its own options, it starts again from the first', () => {
    assert.deepEqual(optionNames(drawtext, args('enable', undefined)), ['enable', 'text']);
    assert.deepEqual(optionNames(drawtext, args('text', 'enable', undefined)), ['text', 'enable', 'fontfile']);
  });
  test('a keyless value with no option left is an error', () => {
    assert.throws(() => optionNames(FILTER_OPTION_ORDER.lut1d, args(undefined, undefined, undefined)), KeylessValueError);
    assert.deepEqual(optionNames(FILTER_OPTION_ORDER.lut1d, args(undefined, undefined, 'file')), ['file', 'interp', 'file']);
  });
});

/** The options `ffmpeg -h filter=NAME` lists (named constants left out), with a value each accepts. */
async function helpOptions(name: string): Promise<{ name: string; sample: string }[]> {
  const help = await ffmpegStdout(['-h', `filter=${name}`]);
  return help
    .split('\n')
    .filter((line) => /^ {3}[A-Za-z0-9_]/.test(line))
    .map((line) => {
      const [, option, type] = /^ {3}(\S+)\s+<(\w+)>/.exec(line) ?? [];
      // A dictionary value holds '=', escaped for both levels so that it never reads as a key.
      const fallback: Record<string, string> = { string: 'x', image_size: '16x16', dictionary: String.raw`a\\=b`, int64: '0' };
      let sample = /\(default "?([^")]*)"?\)/.exec(line)?.[1] ?? fallback[type] ?? '0';
      if (sample === '' || /^[IU]?\d*_?M(IN|AX)$|INT_M|I64_M/.test(sample)) sample = fallback[type] ?? '0';
      return { name: option, sample };
    });
}

/** A graph in which ffmpeg creates the filter with these arguments (and logs how it reads them). */
function graphWith(name: string, filterArgs: string): string {
  if (name === 'movie' || name === 'amovie') return `${name}=${filterArgs}`;
  if (name === 'paletteuse') return `color=s=16x16:d=0.1,split[a][b];[b]palettegen[p];[a][p]paletteuse=${filterArgs}`;
  return `color=s=16x16:d=0.1,${name}=${filterArgs}`;
}

async function keysFfmpegSets(name: string, filterArgs: string): Promise<{ keys: string[]; stderr: string }> {
  const { stderr } = await ffmpeg([
    '-v',
    'repeat+debug',
    '-f',
    'lavfi',
    '-i',
    graphWith(name, filterArgs),
    '-frames:v',
    '1',
    '-f',
    'null',
    '-',
  ]);
  const keys = loggedSettings(stderr)
    .filter((s) => s.filter.startsWith(`Parsed_${name}_`))
    .map((s) => s.key);
  return { keys, stderr };
}

describe('the option order tables match the real ffmpeg', () => {
  test('each table lists the options `ffmpeg -h filter=NAME` prints, in the same order', async () => {
    await inBatches(FILTERS, 8, async (name) => {
      const listed = (await helpOptions(name)).map((o) => o.name);
      assert.deepEqual(FILTER_OPTION_ORDER[name].flat(), listed, name);
    });
  });

  test('keyless values set one option per group, in order, and one value more has no option', async () => {
    await inBatches(FILTERS, 8, async (name) => {
      const samples = new Map((await helpOptions(name)).map((o) => [o.name, o.sample]));
      const groups = FILTER_OPTION_ORDER[name];
      const values = groups.map((group) => samples.get(group[0]));
      const { keys } = await keysFfmpegSets(name, values.join(':'));
      assert.deepEqual(
        keys,
        groups.map((group) => group[0]),
        name,
      );
      const { stderr } = await keysFfmpegSets(name, [...values, 'x'].join(':'));
      assert.match(stderr, /No option name near 'x'/, name);
    });
  });

  test('mixed key=value and keyless values land where optionNames says', async () => {
    // Deterministic pseudo-random sequences of written keys (the filter's options, aliases, the
    // generic enable and threads) and keyless values, besides the cases seen in real commands.
    let seed = 12345;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const cases: [string, (string | undefined)[]][] = [
      ['drawtext', ['text', undefined, undefined]],
      ['drawtext', ['enable', undefined]],
      ['drawtext', ['threads', undefined]],
      ['drawtext', ['text', 'enable', undefined]],
      ['drawtext', ['text', 'fontfile', undefined]],
      ['drawtext', ['r', undefined, undefined]],
      ['subtitles', ['f', undefined, undefined]],
      ['subtitles', [undefined, 'si', undefined]],
      ['movie', ['f', undefined, undefined]],
      ['curves', ['m', undefined, undefined]],
      ['paletteuse', ['new', undefined, undefined]],
    ];
    for (const name of FILTERS) {
      const names = [...FILTER_OPTION_ORDER[name].flat(), 'enable', 'threads'];
      for (let n = 0; n < 6; n++) {
        const length = 2 + random(5);
        cases.push([name, Array.from({ length }, () => (random(2) === 0 ? names[random(names.length)] : undefined))]);
      }
    }
    const problems: string[] = [];
    await inBatches(cases, 8, async ([name, written]) => {
      let expected: string[];
      try {
        expected = optionNames(FILTER_OPTION_ORDER[name], args(...written));
      } catch (error) {
        if (error instanceof KeylessValueError) return; // ffmpeg refuses these too (checked above)
        throw error;
      }
      // Every value is a sample of the option it is expected to land on; a value landing elsewhere
      // shows as another key, or stops ffmpeg early.
      const samples = new Map([...(await helpOptions(name)).map((o) => [o.name, o.sample] as const), ['enable', '1'], ['threads', '1']]);
      const text = written.map((key, i) => (key === undefined ? '' : `${key}=`) + samples.get(expected[i])).join(':');
      const { keys } = await keysFfmpegSets(name, text);
      if (JSON.stringify(keys) !== JSON.stringify(expected)) {
        problems.push(`${name}=${text}: ffmpeg set ${keys.join(', ')}; expected ${expected.join(', ')}`);
      }
    });
    assert.deepEqual(problems, []);
  });
});
