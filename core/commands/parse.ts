// Turns a user's ffmpeg command line into a checked ParsedCommand, or throws CommandRejected saying
// what was refused. The command is hostile: every token is either an allowlisted option with a
// checked value, or a file argument that is a placeholder or a plain relative name.
import { tokenizeArgs } from 'args-tokenizer';
import { checkFiltergraph } from './filtergraph.ts';
import {
  BITSTREAM_FILTERS,
  ENCODER_PARAM_KEYS,
  OPTION_TABLE,
  PATTERN_TYPES,
  REFUSED_OPTIONS,
  formatRefusal,
  optionFitsFile,
} from './option-table.ts';
import type { OptionSpec } from './option-table.ts';
import { CommandRejected } from './parsed-command.ts';
import type { Arg, ParsedCommand, ParsedInput, ParsedOutput } from './parsed-command.ts';
import { placeholderAlias, unescapePlaceholders } from './placeholders.ts';

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

/** Parses and checks one ffmpeg command line. Throws CommandRejected. */
export function parseFfmpegCommand(text: string, opts: ParseOptions): ParsedCommand {
  return new CommandSorter(opts).sort(tokenize(text));
}

function tokenize(text: string): string[] {
  if (text.length > COMMAND_LIMITS.maxChars) {
    throw new CommandRejected(`ffmpeg_command is longer than ${COMMAND_LIMITS.maxChars} characters`);
  }
  if (text.includes('\0')) throw new CommandRejected('ffmpeg_command contains a NUL character');
  let tokens: string[];
  try {
    tokens = tokenizeArgs(unescapePlaceholders(text));
  } catch {
    // args-tokenizer throws only for a quote that is never closed.
    throw new CommandRejected('ffmpeg_command has an unterminated quote: a \' or " is opened but never closed');
  }
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
    for (; i < tokens.length; i++) {
      const token = tokens[i];
      if (token.startsWith('-') && token.length > 1) {
        if (token === '-i') this.addInput(nextValue(token));
        else this.addOption(token, nextValue);
      } else {
        this.addOutput(token);
      }
    }
    if (this.pending.length > 0) {
      const names = this.pending.map((p) => p.token).join(' ');
      throw new CommandRejected(`${names} at the end of ffmpeg_command apply to no file; put them before the output file`);
    }
    if (this.outputs.length === 0) throw new CommandRejected('ffmpeg_command has no output file');
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
      throw new CommandRejected(
        reason ? `option -${base} is not allowed (${reason})` : `option -${base} is unknown or not supported`,
      );
    }
    if (!/^[A-Za-z0-9_:#.\-]*$/.test(specifier)) {
      throw new CommandRejected(`option ${token} has an invalid stream specifier`);
    }
    const args: Arg[] = [token];
    if (spec.value !== 'none') args.push(this.checkValue(spec, token, nextValue(token)));
    // ffmpeg matches format names case-insensitively and -f takes no stream specifier; writing it
    // as plain `-f name` lets the argument builder recognise formats such as concat.
    if (spec.value === 'format') args.splice(0, 2, '-f', String(args[1]).toLowerCase());
    if (spec.scope === 'global') this.globals.push(...args);
    else this.pending.push({ spec, token, args });
  }

  private checkValue(spec: OptionSpec, token: string, value: string): Arg {
    const alias = placeholderAlias(value);
    if (spec.value === 'outputFile') {
      if (alias !== undefined) return this.useOutputAlias(alias);
      return checkRelativeFile(value, token, { role: 'output' });
    }
    if (alias !== undefined) {
      throw new CommandRejected(
        `{{${alias}}} cannot be the value of ${token}; placeholders are files, used after -i or as an output`,
      );
    }
    switch (spec.value) {
      case 'codec':
        if (!/^[A-Za-z0-9_\-]+$/.test(value)) throw new CommandRejected(`${token} "${clip(value)}" is not a codec name`);
        return value;
      case 'format':
        if (!/^[A-Za-z0-9_]+$/.test(value)) throw new CommandRejected(`${token} "${clip(value)}" is not a format name`);
        return value;
      case 'filtergraph':
        checkFiltergraph(value, token);
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
        const refusal = /^[A-Za-z0-9_]+$/.test(value) ? formatRefusal(value.toLowerCase(), 'output') : 'it is not a format name';
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
      default:
        return value;
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
      if (spec.value === 'format') format = String(args[1]);
      if (spec.value === 'patternType') patternType = String(args[1]);
      options.push(...args);
    }
    this.pending = [];
    if (format !== undefined) {
      const refusal = formatRefusal(format, role);
      if (refusal) throw new CommandRejected(`-f ${format} is not allowed for ${role}s (${refusal})`);
    }
    return { options, format, patternType };
  }

  private addInput(value: string): void {
    if (this.inputs.length >= COMMAND_LIMITS.maxInputs) {
      throw new CommandRejected(`ffmpeg_command has more than ${COMMAND_LIMITS.maxInputs} inputs (-i)`);
    }
    const alias = placeholderAlias(value);
    const { options, format, patternType } = this.takePending('input', `input -i ${clip(value)}`);
    let target: Arg;
    if (format === 'lavfi') {
      if (alias !== undefined) {
        throw new CommandRejected(`with -f lavfi, -i takes a filtergraph such as "testsrc=d=5", not the file {{${alias}}}`);
      }
      checkFiltergraph(value, '-i (lavfi input)');
      target = value;
    } else if (alias !== undefined) {
      target = this.useInputAlias(alias);
    } else {
      target = checkRelativeFile(value, '-i', { role: 'input', glob: patternType === 'glob' });
      if (this.relativeOutputs.has(value)) throw new CommandRejected(`"${value}" is both read and written`);
      this.relativeInputs.add(value);
    }
    this.inputs.push({ options, target });
  }

  private addOutput(token: string): void {
    if (this.outputs.length >= COMMAND_LIMITS.maxOutputs) {
      throw new CommandRejected(`ffmpeg_command has more than ${COMMAND_LIMITS.maxOutputs} output files`);
    }
    const alias = placeholderAlias(token);
    const { options, format } = this.takePending('output', `output ${clip(token)}`);
    let target: Arg;
    if (alias !== undefined) {
      target = this.useOutputAlias(alias);
    } else if (format === 'null' && (token === '-' || token === '/dev/null')) {
      target = token; // the null muxer never opens its target
    } else if (this.opts.outputFolder) {
      target = checkRelativeFile(token, 'output', { role: 'output' });
      if (this.relativeOutputs.has(token)) throw new CommandRejected(`output "${token}" is written twice`);
      if (this.relativeInputs.has(token)) throw new CommandRejected(`"${token}" is both read and written`);
      this.relativeOutputs.add(token);
    } else {
      if (token === '-' || token.startsWith('pipe:')) throw new CommandRejected('output to a pipe is not available');
      throw new CommandRejected(
        `output "${clip(token)}" must be a placeholder declared in output_files, e.g. {{out_1}}`,
      );
    }
    this.outputs.push({ options, target });
  }

  private useInputAlias(alias: string): Arg {
    const { inputAliases, outputAliases, earlierOutputAliases } = this.opts;
    if (!inputAliases.has(alias) && !earlierOutputAliases?.has(alias)) {
      if (outputAliases.has(alias)) {
        throw new CommandRejected(
          `{{${alias}}} is an output file; it can be read with -i only by a later command of a chain`,
        );
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
          `{{${alias}}} is used in ffmpeg_command, but output_files is OUTPUT_FOLDER: write output files as plain relative names such as video.mp4`,
        );
      }
      throw new CommandRejected(undeclaredMessage(alias));
    }
    if (this.outputAliases.includes(alias)) throw new CommandRejected(`{{${alias}}} is used as more than one output`);
    this.outputAliases.push(alias);
    return { alias };
  }
}

function undeclaredMessage(alias: string): string {
  const where = alias.startsWith('in_')
    ? 'input_files'
    : alias.startsWith('out_')
      ? 'output_files'
      : 'input_files or output_files (aliases start with in_ or out_)';
  return `{{${alias}}} is used in ffmpeg_command but not declared in ${where}`;
}

interface RelativeFileRules {
  /** What names the file, for the hint in messages: -i, an output position, or an option value. */
  role: FileRole | 'option';
  /** Allow the * and ? wildcards of -pattern_type glob. */
  glob?: boolean;
  /** A name without folders. */
  plainName?: boolean;
}

/** Checks a file name that is not a placeholder: it must stay inside the working folder. */
function checkRelativeFile(name: string, where: string, rules: RelativeFileRules): string {
  const hint = {
    input: 'use an {{in_...}} placeholder or a relative name inside the working folder',
    output: 'use an {{out_...}} placeholder or a relative name inside the working folder',
    option: 'use a relative name inside the working folder',
  }[rules.role];
  const refuse = (why: string): never => {
    throw new CommandRejected(`${where} "${clip(name)}": ${why}; ${hint}`);
  };
  if (name === '') refuse('the file name is empty');
  if (name === '-' || name.startsWith('pipe:')) refuse('pipes are not available');
  if (/[\x00-\x1f\x7f]/.test(name)) refuse('control characters are not allowed');
  if (name.startsWith('/')) refuse('absolute paths are not allowed');
  if (name.includes(':')) refuse('protocols (like file:, http:, concat:) and ":" are not allowed');
  if (name.includes('\\')) refuse('backslashes are not allowed');
  if (name.includes('~')) refuse('"~" is not allowed');
  if (name.startsWith('-')) refuse('a file name cannot start with "-"');
  if (name.length > 1024) refuse('the name is too long');
  const parts = name.split('/');
  if (parts.includes('..')) refuse('".." is not allowed');
  if (parts.includes('')) refuse('empty folder names ("//" or a trailing "/") are not allowed');
  if (rules.plainName && parts.length > 1) refuse('it must be a plain file name without folders');
  const allowed = rules.glob ? /^[A-Za-z0-9_\-./%*?]+$/ : /^[A-Za-z0-9_\-./%]+$/;
  if (!allowed.test(name)) {
    refuse(`only letters, digits and "_-./%"${rules.glob ? ' (and the wildcards * ?)' : ''} are allowed`);
  }
  return name;
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
  if (!/^[A-Za-z0-9_,=:.+\-]+$/.test(value)) {
    throw new CommandRejected(`${token}: only letters, digits and "_,=:.+-" are allowed`);
  }
  for (const item of value.split(',')) {
    const name = item.split('=')[0];
    if (!BITSTREAM_FILTERS.has(name)) {
      throw new CommandRejected(`${token}: bitstream filter "${clip(name)}" is unknown or not allowed`);
    }
  }
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
