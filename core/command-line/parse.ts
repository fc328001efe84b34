// Turns a user's ffmpeg command line into a checked ParsedCommand, or throws CommandRejected saying
// what was refused. The command is hostile: every token is either an allowlisted option with a
// checked value, or a file argument that is a placeholder or a plain relative name. Placeholders may
// also stand inside text values and filter option values; every one of those is a file the command
// reads.
import { splitCommandLine } from './command-line.ts';
import { checkFiltergraph } from './filter-check.ts';
import { FfmpegPhase, firstFailure, type FfmpegFailure } from './ffmpeg-failure.ts';
import { FFMPEG_DEMUXERS, FFMPEG_MUXERS, FFMPEG_OPTIONS } from './ffmpeg-names.ts';
import { checkFontPath, isFontPath } from './font-path.ts';
import { checkTeeOutput } from './tee-output.ts';
import {
  BITSTREAM_FILTERS,
  ENCODER_PARAM_KEYS,
  OPTION_TABLE,
  PATTERN_TYPES,
  REFUSED_OPTIONS,
  formatRefusal,
  optionFitsFile,
} from './option-table.ts';
import type { OptionSpec, ValueKind } from './option-table.ts';

/** Kinds of option values that hold no file and no placeholder. */
type PlainValueKind = Exclude<ValueKind, 'outputFile' | 'inputFile' | 'text' | 'filtergraph' | 'none'>;
import { CommandRejected } from './parsed-command.ts';
import type { Arg, ParsedCommand, ParsedInput, ParsedOutput, Quoting, TemplatePart } from './parsed-command.ts';
import { clip, hasLoneSurrogate, markPlaceholders, splitPlaceholders, unescapePlaceholders, wholePlaceholder } from './placeholders.ts';
import type { ArgPiece } from './placeholders.ts';
import { checkRelativeFile } from './relative-file.ts';

export interface ParseOptions {
  /** Keys of input_files (start with in_). */
  inputAliases: ReadonlySet<string>;
  /** Keys of output_files (start with out_). */
  outputAliases: ReadonlySet<string>;
  /** Chain only: output aliases produced by EARLIER steps; they may be used as inputs, only as `-i {{out_x}}`. */
  earlierOutputAliases?: ReadonlySet<string>;
  /** True when output_files is 'OUTPUT_FOLDER': outputs are plain relative names, no out_ placeholders required. */
  outputFolder?: boolean;
}

export const COMMAND_LIMITS = {
  maxChars: 20_000,
  maxTokens: 1_000,
  maxInputs: 20,
  maxOutputs: 20,
} as const;

/** A command line that passed the checks; ffmpeg may still stop on it (`ffmpegFailure`). */
export interface CheckedCommand {
  command: ParsedCommand;
  /**
   * What ffmpeg says when it stops on this command (a filter, option or format it does not know, a
   * filtergraph it cannot read): the command must not run and ends FAILED with this message. Null
   * when nothing of the kind was found.
   */
  ffmpegFailure: string | null;
}

/**
 * Parses and checks one ffmpeg command line. Throws CommandRejected (a 422) for what the request gets
 * wrong or what the service never allows; returns what only ffmpeg judges as `ffmpegFailure`.
 */
export function checkFfmpegCommand(text: string, opts: ParseOptions): CheckedCommand {
  const sorter = new CommandSorter(opts);
  const command = sorter.sort(tokenize(text));
  return { command, ffmpegFailure: firstFailure(sorter.failures)?.message ?? null };
}

/** As checkFfmpegCommand, for commands that must run: a failure ffmpeg would meet is a CommandRejected too. */
export function parseFfmpegCommand(text: string, opts: ParseOptions): ParsedCommand {
  const { command, ffmpegFailure } = checkFfmpegCommand(text, opts);
  if (ffmpegFailure !== null) throw new CommandRejected(ffmpegFailure);
  return command;
}

/** True when ffmpeg knows the option (also in its -noNAME form for flags): the service refuses it rather than ffmpeg. */
function ffmpegKnowsOption(name: string): boolean {
  return FFMPEG_OPTIONS.has(name) || OPTION_TABLE.has(name) || (name.startsWith('no') && FFMPEG_OPTIONS.has(name.slice(2)));
}

function tokenize(text: string): string[] {
  if (text.length > COMMAND_LIMITS.maxChars) {
    throw new CommandRejected(`ffmpeg_command is longer than ${COMMAND_LIMITS.maxChars} characters`);
  }
  if (text.includes('\0')) throw new CommandRejected('ffmpeg_command contains a NUL character');
  if (hasLoneSurrogate(text)) throw new CommandRejected('ffmpeg_command is not valid Unicode (it has a lone surrogate)');
  let tokens = splitCommandLine(unescapePlaceholders(text));
  if (tokens[0] === 'ffmpeg') tokens = tokens.slice(1);
  if (tokens.length === 0) throw new CommandRejected('ffmpeg_command is empty');
  if (tokens.length > COMMAND_LIMITS.maxTokens) {
    throw new CommandRejected(`ffmpeg_command has more than ${COMMAND_LIMITS.maxTokens} arguments`);
  }
  return tokens;
}

/** A per-file option waiting for the file (-i input or output) it belongs to. */
interface PendingOption {
  spec: OptionSpec;
  token: string;
  args: Arg[];
}

type FileRole = 'input' | 'output';

class CommandSorter {
  private readonly opts: ParseOptions;
  private readonly globals: Arg[] = [];
  private readonly inputs: ParsedInput[] = [];
  private readonly outputs: ParsedOutput[] = [];
  private readonly inputAliases: string[] = [];
  private readonly outputAliases: string[] = [];
  private readonly relativeOutputs = new Set<string>();
  private readonly relativeInputs = new Set<string>();
  private pending: PendingOption[] = [];
  /** What ffmpeg would stop on, in the order found. */
  readonly failures: FfmpegFailure[] = [];
  /** An option ffmpeg does not know was met: ffmpeg reads no further, and neither does the parser. */
  private stopped = false;

  constructor(opts: ParseOptions) {
    this.opts = opts;
  }

  sort(tokens: string[]): ParsedCommand {
    let i = 0;
    const nextValue = (optionToken: string): string => {
      i++;
      if (i >= tokens.length) throw new CommandRejected(`option ${optionToken} needs a value`);
      return tokens[i];
    };
    for (; i < tokens.length && !this.stopped; i++) {
      const token = tokens[i];
      if (token.startsWith('-') && token.length > 1) {
        if (token === '-i') this.addInput(nextValue(token));
        else this.addOption(token, nextValue);
      } else {
        this.addOutput(token);
      }
    }
    if (this.stopped) {
      // ffmpeg reads no further; the outputs named there still count as this command's for a chain's later steps.
      for (const token of tokens.slice(i)) this.noteOutputNamedAfterStop(token);
      return this.parsed();
    }
    if (this.pending.length > 0) {
      const names = this.pending.map((p) => p.token).join(' ');
      throw new CommandRejected(`${names} at the end of ffmpeg_command apply to no file; put them before the output file`);
    }
    if (this.outputs.length === 0) throw new CommandRejected('ffmpeg_command has no output file');
    return this.parsed();
  }

  private noteOutputNamedAfterStop(token: string): void {
    let pieces: ArgPiece[];
    try {
      pieces = splitPlaceholders(token);
    } catch {
      return; // never read by ffmpeg: not ours to judge either
    }
    const alias = wholePlaceholder(pieces);
    if (alias !== undefined && this.opts.outputAliases.has(alias) && !this.outputAliases.includes(alias)) this.outputAliases.push(alias);
  }

  private parsed(): ParsedCommand {
    return {
      globals: this.globals,
      inputs: this.inputs,
      outputs: this.outputs,
      inputAliases: this.inputAliases,
      outputAliases: this.outputAliases,
    };
  }

  private addOption(token: string, nextValue: (optionToken: string) => string): void {
    if (token === '--') throw new CommandRejected('"--" is not supported in ffmpeg_command');
    const name = token.slice(1);
    const colon = name.indexOf(':');
    const base = colon < 0 ? name : name.slice(0, colon);
    const specifier = colon < 0 ? '' : name.slice(colon + 1);
    if (base.startsWith('/')) {
      throw new CommandRejected(`option ${token} is not allowed (the -/option form reads the value from a file)`);
    }
    if (base === 'i') throw new CommandRejected(`write ${token} as -i, without a stream specifier`);
    const spec = OPTION_TABLE.get(base);
    if (!spec) {
      const reason = REFUSED_OPTIONS.get(base);
      if (reason) throw new CommandRejected(`option -${base} is not allowed (${reason})`);
      if (ffmpegKnowsOption(base)) throw new CommandRejected(`option -${base} is not supported`);
      // ffmpeg stops at an option it does not know, before it opens anything (cmdutils.c).
      this.failures.push({
        phase: FfmpegPhase.options,
        message: `Unrecognized option '${name}'.\nError splitting the argument list: Option not found`,
      });
      this.stopped = true;
      return;
    }
    if (!/^[A-Za-z0-9_:#.-]*$/.test(specifier)) {
      throw new CommandRejected(`option ${token} has an invalid stream specifier`);
    }
    const args: Arg[] = [token];
    if (spec.value !== 'none') args.push(this.checkValue(spec, token, nextValue(token)));
    // ffmpeg matches format names case-insensitively and -f takes no stream specifier; writing it
    // as plain `-f name` lets the argument builder recognise formats such as concat.
    if (spec.value === 'format') args.splice(0, 2, '-f', (args[1] as string).toLowerCase()); // plain values are strings
    if (spec.scope === 'global') this.globals.push(...args);
    else this.pending.push({ spec, token, args });
  }

  private checkValue(spec: OptionSpec, token: string, value: string): Arg {
    const pieces = splitPlaceholders(value);
    const alias = wholePlaceholder(pieces);
    switch (spec.value) {
      case 'outputFile':
        if (alias !== undefined) return this.useOutputAlias(alias);
        return checkRelativeFile(wholeOrNone(pieces, token, 'output'), token, { role: 'output' });
      case 'inputFile':
        if (alias !== undefined) return this.useInputAlias(alias);
        // -attach a system font (font-path.ts)
        if (isFontPath(value) && !pieces.some((piece) => typeof piece !== 'string')) return checkFontPath(value, token, 'file');
        return this.relativeInput(checkRelativeFile(wholeOrNone(pieces, token, 'input'), token, { role: 'input' }));
      case 'text':
        return this.textArg(pieces);
      case 'filtergraph':
        return this.graphArg(pieces, token, spec.scope === 'global' ? FfmpegPhase.complexGraphs : FfmpegPhase.simpleGraphs);
      case 'codec':
      case 'format':
      case 'relativeFile':
      case 'plainName':
      case 'encoderParams':
      case 'bsfList':
      case 'muxer':
      case 'streamMap':
      case 'patternType':
        if (pieces.some((piece) => typeof piece !== 'string')) {
          throw new CommandRejected(
            `${token} does not take a placeholder; placeholders stand for files: after -i, as outputs, in filter options and text values`,
          );
        }
        return checkPlainValue(spec, spec.value, token, value);
      case 'none':
        throw new Error(`${token} takes no value`); // never asked: parseOption checks first
    }
  }

  /** Takes the pending options for a file, checking that each one may be given for it. */
  private takePending(role: FileRole, fileLabel: string): { options: Arg[]; format?: string; patternType?: string } {
    const options: Arg[] = [];
    let format: string | undefined;
    let patternType: string | undefined;
    for (const { spec, token, args } of this.pending) {
      if (!optionFitsFile(spec, role)) {
        const fits = role === 'input' ? 'output files' : 'input files';
        throw new CommandRejected(`option ${token} applies to ${fits}, but it is given for ${fileLabel}`);
      }
      // ffmpeg keeps the last value of a repeated option.
      if (spec.value === 'format') format = args[1] as string; // plain values are strings (checkPlainValue)
      if (spec.value === 'patternType') patternType = args[1] as string;
      options.push(...args);
    }
    this.pending = [];
    if (format !== undefined && !(role === 'input' ? FFMPEG_DEMUXERS : FFMPEG_MUXERS).has(format)) {
      // ffmpeg does not know it: it stops there, with these words (ffmpeg_opt.c).
      this.failures.push(
        role === 'input'
          ? { phase: FfmpegPhase.inputs, message: `Unknown input format: '${format}'` }
          : { phase: FfmpegPhase.outputs, message: `Requested output format '${format}' is not a suitable output format` },
      );
    } else if (format !== undefined) {
      const refusal = formatRefusal(format, role);
      if (refusal) throw new CommandRejected(`-f ${format} is not allowed for ${role}s (${refusal})`);
    }
    return { options, format, patternType };
  }

  private addInput(value: string): void {
    if (this.inputs.length >= COMMAND_LIMITS.maxInputs) {
      throw new CommandRejected(`ffmpeg_command has more than ${COMMAND_LIMITS.maxInputs} inputs (-i)`);
    }
    const pieces = splitPlaceholders(value);
    const alias = wholePlaceholder(pieces);
    const { options, format, patternType } = this.takePending('input', `input -i ${clip(value)}`);
    let target: Arg;
    if (format === 'lavfi') {
      if (alias !== undefined) {
        throw new CommandRejected(`with -f lavfi, -i takes a filtergraph such as "testsrc=d=5", not the file {{${alias}}}`);
      }
      target = this.graphArg(pieces, '-i (lavfi input)', FfmpegPhase.inputs);
    } else if (alias !== undefined) {
      target = this.useInputAlias(alias);
    } else {
      const name = checkRelativeFile(wholeOrNone(pieces, '-i', 'input'), '-i', { role: 'input', glob: patternType === 'glob' });
      target = this.relativeInput(name);
    }
    this.inputs.push({ options, target });
  }

  private addOutput(token: string): void {
    if (this.outputs.length >= COMMAND_LIMITS.maxOutputs) {
      throw new CommandRejected(`ffmpeg_command has more than ${COMMAND_LIMITS.maxOutputs} output files`);
    }
    const pieces = splitPlaceholders(token);
    const alias = wholePlaceholder(pieces);
    const { options, format } = this.takePending('output', `output ${clip(token)}`);
    let target: Arg;
    if (format === 'tee') {
      target = this.teeTarget(pieces);
    } else if (alias !== undefined) {
      target = this.useOutputAlias(alias);
    } else if (format === 'null' && (token === '-' || token === '/dev/null')) {
      target = token; // the null muxer never opens its target
    } else if (this.opts.outputFolder) {
      target = checkRelativeFile(wholeOrNone(pieces, 'output', 'output'), 'output', { role: 'output' });
      if (this.relativeOutputs.has(token)) throw new CommandRejected(`output "${token}" is written twice`);
      if (this.relativeInputs.has(token)) throw new CommandRejected(`"${token}" is both read and written`);
      this.relativeOutputs.add(token);
    } else {
      wholeOrNone(pieces, 'output', 'output'); // a placeholder inside a name gets the clearer message
      if (token === '-' || token.startsWith('pipe:')) throw new CommandRejected('output to a pipe is not available');
      throw new CommandRejected(`output "${clip(token)}" must be a placeholder declared in output_files, e.g. {{out_1}}`);
    }
    this.outputs.push({ options, target });
  }

  /** A relative name the command reads (-i, -attach), already checked: it must not be one of its outputs. */
  private relativeInput(name: string): string {
    if (this.relativeOutputs.has(name)) throw new CommandRejected(`"${name}" is both read and written`);
    this.relativeInputs.add(name);
    return name;
  }

  /** A text value (metadata, ...): placeholders in it are replaced by paths as they are, and read. */
  private textArg(pieces: ArgPiece[]): Arg {
    const alias = wholePlaceholder(pieces);
    if (alias !== undefined) return this.useInputAlias(alias);
    if (pieces.every((piece) => typeof piece === 'string')) return pieces.join('');
    return { template: pieces.map((piece) => (typeof piece === 'string' ? piece : this.placeholderPart(piece.alias, []))) };
  }

  /** A tee output: each slave's file is an output placeholder (or a relative name with OUTPUT_FOLDER). */
  private teeTarget(pieces: ArgPiece[]): Arg {
    const files = checkTeeOutput(markPlaceholders(pieces), this.opts.outputFolder ?? false);
    const levels = new Map<number, Quoting[]>();
    for (const file of files) {
      if ('name' in file) {
        if (this.relativeOutputs.has(file.name)) throw new CommandRejected(`output "${file.name}" is written twice`);
        if (this.relativeInputs.has(file.name)) throw new CommandRejected(`"${file.name}" is both read and written`);
        this.relativeOutputs.add(file.name);
      } else {
        levels.set(file.placeholder, [file.quoting]);
      }
    }
    if (pieces.every((piece) => typeof piece === 'string')) return pieces.join('');
    let index = 0;
    const template = pieces.map((piece): TemplatePart => {
      if (typeof piece === 'string') return piece;
      const quoting = levels.get(index++);
      if (!quoting) throw new Error(`placeholder ${index} of a tee output is no slave's file`); // checkTeeOutput refuses it
      this.useOutputAlias(piece.alias);
      return { alias: piece.alias, levels: quoting };
    });
    return { template };
  }

  /**
   * A filtergraph: parsed with its placeholders as marks, so each one's quoting is known. A graph
   * ffmpeg stops on is recorded in `failures` (with `phase`, when ffmpeg creates it); one the parser
   * could not read either stays as written, and never runs.
   */
  private graphArg(pieces: ArgPiece[], where: string, phase: FfmpegPhase): Arg {
    const { graph, ffmpegFailure } = checkFiltergraph(markPlaceholders(pieces), where);
    if (ffmpegFailure !== null) this.failures.push({ phase, message: ffmpegFailure });
    if (pieces.every((piece) => typeof piece === 'string')) return pieces.join('');
    if (graph === null) {
      // The placeholders still name files the request must declare; the text is never run.
      for (const piece of pieces) if (typeof piece !== 'string') this.useInputAlias(piece.alias);
      return pieces.map((piece) => (typeof piece === 'string' ? piece : `{{${piece.alias}}}`)).join('');
    }
    let index = 0;
    const template = pieces.map((piece): TemplatePart => {
      if (typeof piece === 'string') return piece;
      const levels = graph.placeholderLevels[index++];
      // Only filter option values can hold a mark; the parser refuses them anywhere else.
      if (levels?.length !== 2) throw new Error(`placeholder ${index} of ${where} was read at ${levels?.length ?? 0} levels`);
      return this.placeholderPart(piece.alias, levels);
    });
    return { template };
  }

  private placeholderPart(alias: string, levels: Quoting[]): TemplatePart {
    this.useInputAlias(alias);
    return { alias, levels };
  }

  private useInputAlias(alias: string): Arg {
    const { inputAliases, outputAliases, earlierOutputAliases } = this.opts;
    if (!inputAliases.has(alias) && !earlierOutputAliases?.has(alias)) {
      if (outputAliases.has(alias)) {
        throw new CommandRejected(`{{${alias}}} is an output file of this command; only a later command of a chain can read it`);
      }
      throw new CommandRejected(undeclaredMessage(alias));
    }
    if (!this.inputAliases.includes(alias)) this.inputAliases.push(alias);
    return { alias };
  }

  private useOutputAlias(alias: string): Arg {
    const { inputAliases, outputAliases, earlierOutputAliases } = this.opts;
    if (inputAliases.has(alias)) {
      throw new CommandRejected(`{{${alias}}} is an input file and cannot be used as an output`);
    }
    if (earlierOutputAliases?.has(alias)) {
      throw new CommandRejected(`{{${alias}}} is written by an earlier command of the chain and cannot be written again`);
    }
    if (!outputAliases.has(alias)) {
      if (this.opts.outputFolder) {
        throw new CommandRejected(
          `{{${alias}}} is used in ffmpeg_command, but output_files is OUTPUT_FOLDER: ` +
            'write output files as plain relative names such as video.mp4',
        );
      }
      throw new CommandRejected(undeclaredMessage(alias));
    }
    if (this.outputAliases.includes(alias)) throw new CommandRejected(`{{${alias}}} is used as more than one output`);
    this.outputAliases.push(alias);
    return { alias };
  }
}

/** The argument when it holds no placeholder; a file position takes a placeholder only as a whole. */
function wholeOrNone(pieces: ArgPiece[], where: string, role: FileRole): string {
  if (pieces.some((piece) => typeof piece !== 'string')) {
    const example = role === 'input' ? '{{in_1}}' : '{{out_1}}';
    throw new CommandRejected(
      `${where} "${clip(pieces.map((p) => (typeof p === 'string' ? p : `{{${p.alias}}}`)).join(''))}": ` +
        `a file is a placeholder alone, such as ${example}, or a relative name, not both`,
    );
  }
  return (pieces as string[]).join('');
}

function undeclaredMessage(alias: string): string {
  const where = alias.startsWith('in_')
    ? 'input_files'
    : alias.startsWith('out_')
      ? 'output_files'
      : 'input_files or output_files (aliases start with in_ or out_)';
  return `{{${alias}}} is used in ffmpeg_command but not declared in ${where}`;
}

function checkEncoderParams(optionName: string, token: string, value: string): void {
  const keys = ENCODER_PARAM_KEYS[optionName];
  // Without quotes or backslashes, ffmpeg's key=value:key=value parsing is a plain split.
  if (!/^[A-Za-z0-9_.,+\-()/=:]*$/.test(value)) {
    throw new CommandRejected(`${token}: only letters, digits and "_.,+-()/=:" are allowed`);
  }
  for (const pair of value.split(':')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new CommandRejected(`${token}: "${clip(pair)}" is not key=value`);
    const key = pair.slice(0, eq);
    if (!keys.has(key)) throw new CommandRejected(`${token}: "${clip(key)}" is not allowed`);
  }
}

function checkBitstreamFilters(token: string, value: string): void {
  if (!/^[A-Za-z0-9_,=:.+-]+$/.test(value)) {
    throw new CommandRejected(`${token}: only letters, digits and "_,=:.+-" are allowed`);
  }
  for (const item of value.split(',')) {
    const name = item.split('=')[0];
    if (!BITSTREAM_FILTERS.has(name)) {
      throw new CommandRejected(`${token}: bitstream filter "${clip(name)}" is unknown or not allowed`);
    }
  }
}

/** Values that are names or numbers, never files: each kind has its own rule. */
function checkPlainValue(spec: OptionSpec, kind: PlainValueKind, token: string, value: string): string {
  switch (kind) {
    case 'codec':
      if (!/^[A-Za-z0-9_-]+$/.test(value)) throw new CommandRejected(`${token} "${clip(value)}" is not a codec name`);
      return value;
    case 'format':
      if (!/^[A-Za-z0-9_]+$/.test(value)) throw new CommandRejected(`${token} "${clip(value)}" is not a format name`);
      return value;
    case 'relativeFile':
      return checkRelativeFile(value, token, { role: 'option' });
    case 'plainName':
      return checkRelativeFile(value, token, { role: 'option', plainName: true });
    case 'encoderParams':
      checkEncoderParams(spec.name, token, value);
      return value;
    case 'bsfList':
      checkBitstreamFilters(token, value);
      return value;
    case 'muxer': {
      const format = value.toLowerCase();
      const refusal = !/^[A-Za-z0-9_]+$/.test(value)
        ? 'it is not a format name'
        : format === 'tee'
          ? 'a segment cannot be a tee; write -f tee with its slaves as an output'
          : formatRefusal(format, 'output');
      if (refusal) throw new CommandRejected(`${token} ${clip(value)} is not allowed (${refusal})`);
      return value;
    }
    case 'streamMap':
      // hls names playlists and segments after these names (%v), so they must not hold paths.
      if (!/^[A-Za-z0-9_:, ]*$/.test(value)) {
        throw new CommandRejected(`${token}: only letters, digits, spaces and "_:," are allowed`);
      }
      return value;
    case 'patternType':
      if (!PATTERN_TYPES.has(value)) {
        throw new CommandRejected(`${token} "${clip(value)}" is not allowed; use one of: ${[...PATTERN_TYPES].join(', ')}`);
      }
      return value;
  }
}
