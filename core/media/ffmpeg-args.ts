// Builds the ffmpeg argv from a parsed command: the one place where the service adds its own options.
//
// Layout (ffmpeg's grammar is [globals] {[input options] -i input}... {[output options] output}...):
//   <user globals> <service globals>
//   for each input:  <user input options> <service input options> -i <input>
//   for each output: <user output options> <service output options> <output>
// The service's options come AFTER the user's in every group: when ffmpeg sees an option twice for
// the same file (or globally), the last one wins, so the service's limits hold even if a user option
// slipped past the parser's allowlist. Each option below was checked with Debian's ffmpeg 5.1 in
// its position.
//
// Placeholders become the files' relative paths in the working folder. One inside an argument (a
// filter option, a metadata value) is escaped for every level of ffmpeg's quoting it passes
// through (core/command-line/render-arg.ts), so any path reads back exactly.

import type { Arg, ParsedCommand } from '../command-line/parsed-command.ts';
import { renderArg } from '../command-line/render-arg.ts';

/** 8192 x 8192 = 64 megapixels: above 8K UHD (7680 x 4320), far below what exhausts memory. */
export const DEFAULT_MAX_PIXELS = 8192 * 8192;

export interface FfmpegArgsOptions {
  /** Thread cap for every decoder, encoder and filter graph (the command's vCPU count). */
  threads: number;
  /** Largest picture (width x height) any decoder may allocate. */
  maxPixels?: number;
}

/** What the service adds, for documentation. */
export const SERVICE_OPTIONS = {
  globals: {
    '-hide_banner': 'no build banner in the log',
    '-nostdin': 'never read the keyboard (stdin is closed anyway)',
    '-y': 'overwrite output files (the working folder is fresh)',
    '-nostats -progress pipe:1': 'machine-readable progress on stdout instead of the status line',
    '-filter_threads T, -filter_complex_threads T': 'filter graphs use at most T threads',
  },
  inputs: {
    '-protocol_whitelist file,pipe': 'inputs (and playlists, concat lists inside them) open local files only',
    '-safe 1': 'concat lists may not name absolute or ../ paths (added with -f concat or a user -safe)',
    '-max_pixels N': 'decoders refuse pictures larger than N pixels (decompression bombs)',
    '-threads T': 'decoders use at most T threads',
  },
  outputs: {
    '-protocol_whitelist file': 'outputs (and HLS/DASH segments) are written to local files only',
    '-threads T': 'encoders use at most T threads',
  },
} as const;

export function buildFfmpegArgv(cmd: ParsedCommand, resolve: (alias: string) => string, opts: FfmpegArgsOptions): string[] {
  const threads = positiveInteger(opts.threads, 'threads');
  const maxPixels = positiveInteger(opts.maxPixels ?? DEFAULT_MAX_PIXELS, 'maxPixels');
  const text = (arg: Arg): string => renderArg(arg, resolve);

  // The user's -n would contradict the service's -y (ffmpeg refuses both); in a fresh folder neither matters.
  const argv: string[] = cmd.globals.map(text).filter((a) => a !== '-n' && a !== '-y');
  argv.push('-hide_banner', '-nostdin', '-y', '-nostats', '-progress', 'pipe:1');
  argv.push('-filter_threads', String(threads), '-filter_complex_threads', String(threads));

  for (const input of cmd.inputs) {
    const options = input.options.map(text);
    argv.push(...options, '-protocol_whitelist', 'file,pipe');
    // -safe is the concat demuxer's own option; any other demuxer rejects it ("Option safe not found").
    // A list starting "ffconcat version 1.0" is found by probing, without -f concat, so a -safe the
    // user gave is overridden too.
    if (hasFormat(options, 'concat') || options.includes('-safe')) argv.push('-safe', '1');
    argv.push('-max_pixels', String(maxPixels), '-threads', String(threads));
    argv.push('-i', target(text(input.target)));
  }

  for (const output of cmd.outputs) {
    argv.push(...output.options.map(text), '-protocol_whitelist', 'file', '-threads', String(threads));
    argv.push(target(text(output.target)));
  }
  return argv;
}

function hasFormat(options: string[], format: string): boolean {
  return options.some((option, i) => option === '-f' && options[i + 1] === format);
}

// A target starting with '-' would be read as an option; the parser refuses these and this is the
// last line of defence. '-' alone (stdin/stdout) stays allowed: stdin is closed, and stdout (the
// progress report) is off the outputs' protocol whitelist, so only `-f null -` can use it.
function target(value: string): string {
  if (value === '' || (value.startsWith('-') && value !== '-')) throw new Error(`invalid ffmpeg input or output: ${JSON.stringify(value)}`);
  return value;
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${value}`);
  return value;
}
