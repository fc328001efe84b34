// The shape a validated FFmpeg command line takes between the parser (core/command-line/parse.ts) and
// the argument builder (core/media/ffmpeg-args.ts). ffmpeg's own grammar is
//   [global options] {[input options] -i input}... {[output options] output}...
// and the parser sorts every user token into that structure, so the service can add its own options
// in the right places without re-parsing text. Commands are stored as JSON, so every shape here is
// plain data; the first two forms of Arg are the only ones older rows hold.

/**
 * One argument:
 * - literal text;
 * - `{ alias }`: the whole argument is a file placeholder, replaced by the file's local path;
 * - `{ template }`: text with placeholders inside it (`subtitles={{in_srt}}:force_style=...`,
 *   `title=Made from {{in_1}}`), each replaced by its path escaped for where it stands.
 */
export type Arg = string | { alias: string } | { template: TemplatePart[] };

/** A piece of a template argument: literal text exactly as the user wrote it, or a placeholder. */
export type TemplatePart = string | PlaceholderPart;

/**
 * How a token level of ffmpeg (av_get_token in libavutil/avstring.c) reads the place where a
 * placeholder stands: 'bare' (a backslash escapes any character) or 'quoted' (inside '...', where
 * everything but the closing quote is literal).
 */
export type Quoting = 'bare' | 'quoted';

export interface PlaceholderPart {
  alias: string;
  /**
   * The token levels ffmpeg reads the text through before it uses the value, outermost first:
   * [] in a plain option value (`-metadata title=...`, `-attach`); [graph, filter arguments] for a
   * filter option value inside a filtergraph. The path is escaped for each level, innermost first.
   */
  levels: Quoting[];
}

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
  /**
   * Aliases of files the command reads, in order of first use: after -i, and inside arguments
   * (filter options such as subtitles= or fontfile=, -attach, ...). The runner provides each one.
   */
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
