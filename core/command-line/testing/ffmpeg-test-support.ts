// Helpers for the tests that hold the parser to the real ffmpeg binary (Debian's 5.1). Not used by
// the service.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { copyFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

let scratch: string | undefined;

/** The test process's scratch folder, removed when the process exits (each CI run left two behind). */
function scratchFolder(): string {
  const folder = mkdtempSync(join(tmpdir(), 'ffmpeg-test-'));
  process.once('exit', () => rmSync(folder, { recursive: true, force: true }));
  return folder;
}

/**
 * Runs ffmpeg in `cwd` (by default a scratch folder: sample option values such as debug_kdtree=x
 * write files); resolves with its exit code and stderr, whatever the exit status.
 */
export async function ffmpeg(args: string[], cwd?: string): Promise<{ code: number; stderr: string }> {
  cwd ??= scratch ??= scratchFolder();
  try {
    const { stderr } = await run('ffmpeg', ['-hide_banner', '-nostdin', ...args], { cwd, maxBuffer: 32 << 20 });
    return { code: 0, stderr };
  } catch (error) {
    const failure = error as { code?: number; stderr?: string };
    return { code: typeof failure.code === 'number' ? failure.code : -1, stderr: failure.stderr ?? String(error) };
  }
}

export async function ffmpegStdout(args: string[]): Promise<string> {
  const { stdout } = await run('ffmpeg', ['-hide_banner', ...args], { maxBuffer: 32 << 20 });
  return stdout;
}

/** Runs `work` over items, `width` at a time. */
export async function inBatches<T>(items: T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(work));
}

export interface LoggedSetting {
  /** The filter instance: `Parsed_<name>_<index>`, or `<name>@<instance>`. */
  filter: string;
  key: string;
  value: string;
}

/**
 * The option settings ffmpeg logs at `-v repeat+debug` ("[Parsed_scale_0 @ 0x...] Setting 'w' to
 * value '32'"; without "repeat", a line equal to the one before is only counted), for the filters of
 * the graphs the user wrote. ffmpeg may build a graph more than once (it parses -filter_complex once
 * to learn its pads), so only the first instance of each filter counts.
 */
export function loggedSettings(stderr: string): LoggedSetting[] {
  const firstAddress = new Map<string, string>();
  const settings: LoggedSetting[] = [];
  for (const m of stderr.matchAll(/^\[(Parsed_\w+_\d+|[^\s@\]]+@[^\s\]]+) @ (0x[0-9a-f]+)\] Setting '([^']*)' to value '(.*)'$/gm)) {
    const [, filter, address, key, value] = m;
    if (!firstAddress.has(filter)) firstAddress.set(filter, address);
    if (firstAddress.get(filter) === address) settings.push({ filter, key, value });
  }
  return settings;
}

/**
 * Small media made with ffmpeg itself, in `dir`: clip.mkv (64x64 video, audio and a subtitle
 * stream, 1 s), subs.srt, subs.ass, logo.png, tone.wav, grade.cube (3D LUT), ramp.cube (1D LUT),
 * curves.acv (Photoshop curves), font.ttf (a system font), list.txt (a concat list).
 */
export async function makeMediaFixtures(dir: string): Promise<void> {
  const make = async (args: string[]): Promise<void> => {
    const { code, stderr } = await ffmpeg(['-v', 'error', '-y', ...args], dir);
    if (code !== 0) throw new Error(`making a fixture failed: ffmpeg ${args.join(' ')}\n${stderr}`);
  };
  await writeFile(join(dir, 'subs.srt'), '1\n00:00:00,000 --> 00:00:00,900\nHello, world\n');
  await make([
    '-f',
    'lavfi',
    '-i',
    'testsrc=s=64x64:r=10:d=1',
    '-f',
    'lavfi',
    '-i',
    'sine=d=1',
    '-i',
    'subs.srt',
    '-map',
    '0',
    '-map',
    '1',
    '-map',
    '2',
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-pix_fmt',
    'yuv420p',
    '-c:a',
    'aac',
    '-c:s',
    'srt',
    '-shortest',
    'clip.mkv',
  ]);
  await make(['-i', 'subs.srt', 'subs.ass']);
  await make(['-f', 'lavfi', '-i', 'color=c=red:s=16x16', '-frames:v', '1', 'logo.png']);
  await make(['-f', 'lavfi', '-i', 'sine=f=440:d=1', 'tone.wav']);
  const cube = ['LUT_3D_SIZE 2'];
  for (let b = 0; b < 2; b++) for (let g = 0; g < 2; g++) for (let r = 0; r < 2; r++) cube.push(`${r} ${g} ${b}`);
  await writeFile(join(dir, 'grade.cube'), `${cube.join('\n')}\n`);
  await writeFile(join(dir, 'ramp.cube'), 'LUT_1D_SIZE 2\n0 0 0\n1 1 1\n');
  // Photoshop .acv: version, curve count, then per curve its point count and (output, input) pairs.
  const acv = Buffer.alloc(14);
  [4, 1, 2, 0, 0, 255, 255].forEach((word, i) => acv.writeUInt16BE(word, i * 2));
  await writeFile(join(dir, 'curves.acv'), acv);
  const { stdout } = await run('fc-match', ['--format=%{file}', 'DejaVu Sans']);
  await copyFile(stdout.trim(), join(dir, 'font.ttf'));
  await writeFile(join(dir, 'list.txt'), "file 'clip.mkv'\nfile 'clip.mkv'\n");
}
