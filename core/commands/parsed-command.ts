// The shape a validated FFmpeg command line takes between the parser (core/commands/parse.ts) and
// the argument builder (core/media/ffmpeg-args.ts). ffmpeg's own grammar is
//   [global options] {[input options] -i input}... {[output options] output}...
// and the parser sorts every user token into that structure, so the service can add its own options
// in the right places without re-parsing text.

/** One argument: literal text, or a file placeholder `{{alias}}` resolved to a local path at run time. */
export type Arg = string | { alias: string };

export interface ParsedInput {
  /** Options that apply to this input, in order (e.g. ['-ss', '5', '-f', 'lavfi']). */
  options: Arg[];
  /** The value after -i: a placeholder, a relative path in the working folder, or a lavfi graph. */
  target: Arg;
}

export interface ParsedOutput {
  options: Arg[];
  /** A placeholder or a relative path in the working folder. */
  target: Arg;
}

export interface ParsedCommand {
  /** Options that apply to the whole run (-filter_complex, -loglevel, -y, ...). */
  globals: Arg[];
  inputs: ParsedInput[];
  outputs: ParsedOutput[];
  /** Aliases used after -i, in order of first use. */
  inputAliases: string[];
  /** Aliases used as output files, in order of first use. */
  outputAliases: string[];
}

/** Thrown for any command the service refuses; the API answers 422 with this message. */
export class CommandRejected extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CommandRejected';
  }
}
