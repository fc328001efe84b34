import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ffmpeg, inBatches, loggedSettings, makeMediaFixtures } from './testing/ffmpeg-test-support.ts';
import { parseFiltergraph } from './filtergraph.ts';
import type { Arg, TemplatePart } from './parsed-command.ts';
import { markIndex, markPlaceholders, splitPlaceholders } from './placeholders.ts';
import { escapeForLevel, escapePath, renderArg } from './render-arg.ts';

describe('renderArg', () => {
  const resolve = (alias: string): string => `.in/${alias}/a b.srt`;

  test('literal text, whole placeholders and templates', () => {
    assert.equal(renderArg('-vf', resolve), '-vf');
    assert.equal(renderArg({ alias: 'in_1' }, resolve), '.in/in_1/a b.srt');
    const template: Arg = { template: ['title=from ', { alias: 'in_1', levels: [] }, '!'] };
    assert.equal(renderArg(template, resolve), 'title=from .in/in_1/a b.srt!');
  });

  test('escapes for each level, innermost first', () => {
    assert.equal(escapeForLevel('.in/x y', 'bare'), String.raw`\.in/x\ y`);
    assert.equal(escapeForLevel("it's", 'quoted'), String.raw`it'\''s`);
    assert.equal(escapePath('a:b', ['bare', 'bare']), String.raw`\\a\\\:b`);
    assert.equal(escapePath("a'b", ['quoted', 'bare']), String.raw`\a\'\''b`);
    assert.equal(escapePath('', ['bare', 'bare']), '');
  });
});

describe('placeholders in filtergraphs read back exactly in the real ffmpeg', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'render-arg-test-'));
    await makeMediaFixtures(dir);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  // Where a placeholder can stand: unquoted or quoted at each level, alone, inside other text, as
  // a keyless value, next to another placeholder.
  const TEMPLATES = [
    'drawtext=text={{in_1}}',
    "drawtext=text='{{in_1}}'",
    String.raw`drawtext=text=\'{{in_1}}\'`,
    String.raw`drawtext=text=\''{{in_1}}'\'`,
    'drawtext=fontfile=font.ttf:{{in_1}}',
    'drawtext=text=pre{{in_1}}post:x=1',
    "drawtext=text='a, '{{in_1}}' b':y=2",
    'drawtext=text={{in_1}}{{in_2}}:fontsize=9',
    String.raw`drawtext=text=x\:{{in_1}}\,y`,
    // Followed by '=': at check time the mark is no key character, so the path must not be one either.
    'drawtext=fontfile=font.ttf:{{in_1}}=x',
    'drawtext=fontfile=font.ttf:ab{{in_1}} =x',
  ];
  // Paths with every character that matters to av_get_token or to option parsing.
  const PATHS = [
    '.in/in_1/subs.srt',
    'plain',
    String.raw`.in/in_1/we'ird, [x]: y=1; z\w.srt`,
    ' leading and trailing ',
    "'",
    '\\',
    'a=b',
    'text=evil:x=9',
    '[out];null',
    "'quoted':\\:\\\\",
    'vidéo ✓\ttab',
  ];

  /** The graph text for a template, and the values ffmpeg should read from it. */
  function render(template: string, resolve: (alias: string) => string): { graph: string; values: string[] } {
    const pieces = splitPlaceholders(`color=s=16x16:d=0.1,${template}`);
    const { filters, placeholderLevels } = parseFiltergraph(markPlaceholders(pieces));
    // The template exactly as the parser builds it: literal text, and each placeholder's levels.
    const aliases: string[] = [];
    const parts = pieces.map((piece): TemplatePart => {
      if (typeof piece === 'string') return piece;
      aliases.push(piece.alias);
      return { alias: piece.alias, levels: placeholderLevels[aliases.length - 1] };
    });
    // What the marked graph parses to, with each mark replaced by its path.
    const unmark = (value: string): string =>
      [...value].map((c) => (markIndex(c) === undefined ? c : resolve(aliases[markIndex(c)!]))).join('');
    return { graph: renderArg({ template: parts }, resolve), values: filters.flatMap((f) => f.args.map((a) => unmark(a.value))) };
  }

  test(`${TEMPLATES.length} positions x ${PATHS.length} paths`, async () => {
    const runs = TEMPLATES.flatMap((template) => PATHS.map((path) => ({ template, path })));
    const problems: string[] = [];
    await inBatches(runs, 8, async ({ template, path }) => {
      const { graph, values } = render(template, (alias) => (alias === 'in_1' ? path : `${path}#2`));
      const { stderr } = await ffmpeg(['-v', 'repeat+debug', '-f', 'lavfi', '-i', graph, '-frames:v', '1', '-f', 'null', '-'], dir);
      const read = loggedSettings(stderr).map((setting) => setting.value);
      if (JSON.stringify(read) !== JSON.stringify(values)) {
        problems.push(
          `${JSON.stringify(path)} in ${template} -> ${graph}\n` +
            `  ffmpeg read ${JSON.stringify(read)}\n  expected    ${JSON.stringify(values)}`,
        );
      }
    });
    assert.deepEqual(problems, []);
  });
});
