// Parses ffmpeg filtergraph text the way libavfilter does (ffmpeg 5.1: graphparser.c for the graph,
// process_options in avfilter.c and av_opt_get_key_value for each filter's arguments, av_get_token
// for the quoting and escaping at both levels). The parser must unquote exactly like ffmpeg: a name
// written `'mo'vie` or `mo\vie` is the filter "movie" to ffmpeg, so it must be "movie" here too.
//
// Placeholders arrive as mark characters (placeholders.ts). The parser reports, for each one, how
// the graph level and the filter-argument level quote it, so the argument builder can escape the
// real path to read back the same way.
import type { Quoting } from './parsed-command.ts';
import { markIndex } from './placeholders.ts';

export interface FilterArg {
  /** The option name as written, or undefined for a value given without a key. */
  key?: string;
  value: string;
}

export interface FilterInstance {
  /** Filter name as ffmpeg resolves it (quotes and escapes removed, `@instance` cut off). */
  name: string;
  /** The `@instance` suffix, if any. */
  instance?: string;
  /** Every value in the order written; ffmpeg sets them in this order. */
  args: FilterArg[];
  inputLabels: string[];
  outputLabels: string[];
}

export interface ParsedGraph {
  filters: FilterInstance[];
  /** For placeholder mark i: its quoting at the graph level, then at the filter-argument level. */
  placeholderLevels: Quoting[][];
}

/**
 * A graph the parser cannot read. `ffmpegMessage` is set when ffmpeg cannot read it either, in
 * ffmpeg's words (5.1's graphparser.c and avfilter.c); without it the text is the service's own
 * refusal (a placeholder where no file can stand, too many filters). `filtersBefore` are the filters
 * read before the error: ffmpeg creates them before it stops.
 */
export class FiltergraphSyntaxError extends Error {
  readonly ffmpegMessage?: string;
  filtersBefore: FilterInstance[] = [];
  constructor(message: string, ffmpegMessage?: string) {
    super(message);
    this.name = 'FiltergraphSyntaxError';
    this.ffmpegMessage = ffmpegMessage;
  }
}

const WHITESPACE = ' \n\t\r';
const MAX_FILTERS = 500;

/** How av_get_token read a placeholder mark. */
export type MarkReading = Quoting | 'escaped' | 'unclosed';

export interface Token {
  value: string;
  end: number;
  marks: { index: number; reading: MarkReading }[];
}

/** Port of av_get_token: reads up to an unquoted, unescaped char of `terms`, removing one level of quoting. */
export function readToken(text: string, from: number, terms: string): Token {
  let p = skipWhitespace(text, from);
  let out = '';
  let protectedLength = 0; // trailing whitespace is trimmed, except what was quoted or escaped
  const marks: Token['marks'] = [];
  const note = (c: string, reading: MarkReading): void => {
    const index = markIndex(c);
    if (index !== undefined) marks.push({ index, reading });
  };
  while (p < text.length && !terms.includes(text[p])) {
    const c = text[p++];
    if (c === '\\' && p < text.length) {
      note(text[p], 'escaped');
      out += text[p++];
      protectedLength = out.length;
    } else if (c === "'") {
      const quoted = marks.length;
      while (p < text.length && text[p] !== "'") {
        note(text[p], 'quoted');
        out += text[p++];
      }
      if (p < text.length) {
        p++;
        protectedLength = out.length;
      } else {
        // A quote left open still reads as quoted, but its trailing whitespace is trimmed.
        for (const mark of marks.slice(quoted)) mark.reading = 'unclosed';
      }
    } else {
      note(c, 'bare');
      out += c;
    }
  }
  let length = out.length;
  while (length > protectedLength && WHITESPACE.includes(out[length - 1])) length--;
  return { value: out.slice(0, length), end: p, marks };
}

function skipWhitespace(text: string, from: number): number {
  let p = from;
  while (p < text.length && WHITESPACE.includes(text[p])) p++;
  return p;
}

function noPlaceholderIn(token: Token, what: string): void {
  if (token.marks.length > 0) {
    throw new FiltergraphSyntaxError(`a placeholder cannot stand in a ${what}, only in a filter option value`);
  }
}

function readLabels(text: string, from: number, labels: string[]): number {
  let p = from;
  while (text[p] === '[') {
    const token = readToken(text, p + 1, ']');
    noPlaceholderIn(token, 'link label');
    if (token.value === '') {
      throw new FiltergraphSyntaxError(
        `empty link label near "${text.slice(p, p + 20)}"`,
        `Bad (empty?) label found in the following: "${text.slice(p)}".`,
      );
    }
    if (text[token.end] !== ']') {
      throw new FiltergraphSyntaxError(
        `unclosed '[' near "${text.slice(p, p + 20)}"`,
        `Mismatched '[' found in the following: "${text.slice(p)}".`,
      );
    }
    labels.push(token.value);
    p = skipWhitespace(text, token.end + 1);
  }
  return p;
}

function isKeyChar(c: string | undefined): boolean {
  return c !== undefined && /[A-Za-z0-9\-_/.]/.test(c);
}

/** Port of get_key in av_opt_get_key_value: a key is [A-Za-z0-9-_/.]* followed by optional spaces and '='. */
export function readKey(args: string, from: number): { key: string; end: number } | undefined {
  let p = skipWhitespace(args, from);
  const start = p;
  while (isKeyChar(args[p])) p++;
  const key = args.slice(start, p);
  p = skipWhitespace(args, p);
  if (args[p] !== '=') return undefined;
  return { key, end: p + 1 };
}

class GraphReader {
  readonly placeholderLevels: Quoting[][] = [];

  /** Records how one level read each placeholder mark of a token. */
  record(token: Token): void {
    for (const { index, reading } of token.marks) {
      if (reading === 'escaped') throw new FiltergraphSyntaxError('a placeholder cannot follow a backslash');
      if (reading === 'unclosed') throw new FiltergraphSyntaxError("a placeholder is inside a ' quote that is never closed");
      (this.placeholderLevels[index] ??= []).push(reading);
    }
  }

  /** Port of process_options' reading: `:`-separated values, each `key=value` or keyless. */
  readFilterArgs(args: string, filter: FilterInstance): void {
    let p = 0;
    while (p < args.length) {
      const key = readKey(args, p);
      const token = readToken(args, key ? key.end : p, ':');
      this.record(token);
      p = token.end < args.length ? token.end + 1 : token.end;
      if (key && key.key === '') {
        throw new FiltergraphSyntaxError(`filter "${filter.name}": option with an empty name`, "Option '' not found");
      }
      filter.args.push(key ? { key: key.key, value: token.value } : { value: token.value });
    }
  }

  /** The filters read so far (all of them once `read` returns). */
  readonly filters: FilterInstance[] = [];

  read(text: string): FilterInstance[] {
    const filters = this.filters;
    let p = skipWhitespace(text, 0);
    if (text.startsWith('sws_flags=', p)) {
      // Graph-wide scaler flags; ffmpeg appends them to every scale filter's options.
      const end = text.indexOf(';', p);
      if (end < 0) throw new FiltergraphSyntaxError('sws_flags is not terminated with ";"', "sws_flags not terminated with ';'.");
      const flags = text.slice(p + 'sws_flags='.length, end);
      if (!/^[A-Za-z0-9_+\-|.]*$/.test(flags)) throw new FiltergraphSyntaxError(`unexpected sws_flags "${flags}"`);
      p = end + 1;
    }
    let separator: string | undefined;
    do {
      if (filters.length >= MAX_FILTERS) throw new FiltergraphSyntaxError(`more than ${MAX_FILTERS} filters`);
      p = skipWhitespace(text, p);
      const inputLabels: string[] = [];
      p = readLabels(text, p, inputLabels);
      const nameToken = readToken(text, p, '=,;[');
      noPlaceholderIn(nameToken, 'filter name');
      p = nameToken.end;
      if (nameToken.value === '') {
        throw new FiltergraphSyntaxError(`missing filter name near "${text.slice(Math.max(0, p - 10), p + 10)}"`, "No such filter: ''");
      }
      const filter: FilterInstance = { ...splitInstance(nameToken.value), args: [], inputLabels, outputLabels: [] };
      if (text[p] === '=') {
        const args = readToken(text, p + 1, '[],;');
        this.record(args);
        p = args.end;
        this.readFilterArgs(args.value, filter);
      }
      filters.push(filter); // ffmpeg creates it before it reads the output labels
      p = readLabels(text, p, filter.outputLabels);
      p = skipWhitespace(text, p);
      separator = text[p];
      p++;
    } while (separator === ',' || separator === ';');
    if (separator !== undefined) {
      throw new FiltergraphSyntaxError(
        `cannot parse the graph from "${text.slice(p - 1, p + 29)}"`,
        `Unable to parse graph description substring: "${text.slice(p - 1)}"`,
      );
    }
    return filters;
  }
}

/** Splits `name@instance` like create_filter does. */
function splitInstance(fullName: string): { name: string; instance?: string } {
  const at = fullName.indexOf('@');
  if (at < 0 || at === fullName.length - 1) return { name: fullName };
  return { name: fullName.slice(0, at), instance: fullName.slice(at + 1) };
}

/** Parses a filtergraph (`-vf`, `-af`, `-filter_complex`, a lavfi input) into its filters. */
export function parseFiltergraph(text: string): ParsedGraph {
  const reader = new GraphReader();
  try {
    const filters = reader.read(text);
    return { filters, placeholderLevels: reader.placeholderLevels };
  } catch (error) {
    if (error instanceof FiltergraphSyntaxError) error.filtersBefore = [...reader.filters];
    throw error;
  }
}
