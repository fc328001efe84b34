import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { splitCommandLine } from './command-line.ts';
import { CommandRejected } from './parsed-command.ts';

const run = promisify(execFile);

/** How /bin/sh splits the text into arguments (globbing off; the texts use no $, ~, # or operators). */
async function shellWords(text: string): Promise<string[]> {
  const { stdout } = await run('sh', ['-c', `set -f; printf '%s\\0' ${text}`]);
  return stdout.split('\0').slice(0, -1);
}

// Commands as clients write them: filter text in double quotes with single quotes inside, escaped
// colons and quotes, metadata with spaces, empty arguments, line continuations.
const COMMANDS = [
  '-i {{in_1}} -c:v libx264 -crf 23 {{out_1}}',
  String.raw`-i {{in_1}} -vf "drawtext=text='LEVEL\: 3':fontsize=42" {{out_1}}`,
  String.raw`-i {{in_1}} -filter_complex "[0:v]drawtext=text='it\'s':x=1[v]" -map "[v]" {{out_1}}`,
  `-i {{in_1}} -vf "subtitles={{in_srt}}:force_style='Fontsize=24,PrimaryColour=&H0000ff&'" {{out_1}}`,
  `-i {{in_1}} -vf 'subtitles={{in_srt}}:force_style='"'"'Fontsize=24'"'"'' {{out_1}}`,
  String.raw`-vf "select='eq(pict_type\,I)'" -vf select=eq\(pict_type\\,I\)`,
  String.raw`-metadata title="My \"quoted\" clip" -metadata comment='it'\''s' -metadata x="a\\b\c"`,
  String.raw`a\ b "c\$d" "e\\f" "g\h" 'i\j' "" '' x""y "\`"`,
  '-i x \\\n  -c copy\t-y {{out_1}}',
  String.raw`-dump_attachment:t "" -i {{in_1}}`,
  '  leading and trailing  ',
];

describe('splitCommandLine', () => {
  test('splits like a POSIX shell', async () => {
    for (const text of COMMANDS) assert.deepEqual(splitCommandLine(text), await shellWords(text), text);
  });

  test('takes a newline for a blank (a shell would end the command there)', () => {
    assert.deepEqual(splitCommandLine('-i x\n-y\r\n{{out_1}}'), ['-i', 'x', '-y', '{{out_1}}']);
  });

  test('keeps backslashes a shell keeps, so ffmpeg sees its own escapes', () => {
    assert.deepEqual(splitCommandLine(String.raw`-vf "drawtext=text='a\: b'"`), ['-vf', String.raw`drawtext=text='a\: b'`]);
    assert.deepEqual(splitCommandLine(String.raw`'a\'`), ['a\\']);
  });

  test('refuses an unterminated quote', () => {
    for (const text of [`-i "x`, `-i 'x`, String.raw`-i "x\"`]) {
      assert.throws(
        () => splitCommandLine(text),
        (e: Error) => e instanceof CommandRejected && e.message.includes('unterminated quote'),
        text,
      );
    }
  });
});
