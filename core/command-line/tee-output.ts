// The tee muxer's output argument: `[f=mp4]{{out_1}}|[f=matroska:select=v]{{out_2}}`. tee writes each
// slave to the file it names, with the options in brackets given to that slave's muxer (and to the
// file it opens), so each slave is read here as libavformat/tee.c reads it (5.1): slaves split on '|'
// by av_get_token, then `[key=value:...]` read by av_opt_get_key_value, the rest being the file. A
// slave's file must be an output placeholder (or, with OUTPUT_FOLDER, a relative name); its options
// come from a short list that names no file and no protocol.
import { readKey, readToken, type MarkReading, type Token } from './filtergraph.ts';
import { BITSTREAM_FILTERS, OUTPUT_FORMATS } from './option-table.ts';
import { CommandRejected, type Quoting } from './parsed-command.ts';
import { clip, markIndex } from './placeholders.ts';
import { checkRelativeFile } from './relative-file.ts';

/** tee.c's MAX_SLAVES. */
const MAX_SLAVES = 16;

/** Formats a slave may use: one file each (segmenting muxers name more files by their own options). */
const MULTI_FILE_FORMATS = new Set(['tee', 'hls', 'dash', 'segment', 'stream_segment', 'ssegment', 'image2']);

/** Muxer options a slave may set: none of them names a file. */
// prettier-ignore
const SLAVE_MUXER_OPTIONS = new Set(['movflags', 'frag_duration', 'min_frag_duration', 'brand', 'write_tmcd',
  'id3v2_version', 'write_id3v1', 'write_xing', 'reset_timestamps', 'avoid_negative_ts', 'max_interleave_delta']);

/** A slave's file: an output placeholder (mark `index`, read by the slave level as `quoting`) or a relative name. */
export type TeeSlaveFile = { placeholder: number; quoting: Quoting } | { name: string };

/** Reads and checks a tee output (placeholders as marks); the file each slave writes. Throws CommandRejected. */
export function checkTeeOutput(text: string, outputFolder: boolean): TeeSlaveFile[] {
  const files: TeeSlaveFile[] = [];
  let p = 0;
  while (p < text.length) {
    if (files.length === MAX_SLAVES) throw new CommandRejected(`-f tee: more than ${MAX_SLAVES} slaves`);
    const slave = readToken(text, p, '|');
    p = slave.end < text.length ? slave.end + 1 : slave.end;
    files.push(checkSlave(slave, files.length + 1, outputFolder));
  }
  if (files.length === 0) throw new CommandRejected('-f tee: the output names no slave');
  return files;
}

function checkSlave(slave: Token, number: number, outputFolder: boolean): TeeSlaveFile {
  const where = `-f tee slave ${number}`;
  const text = slave.value;
  let fileStart = 0;
  if (text.startsWith('[')) {
    let q = 1;
    if (text[q] !== ']') {
      for (;;) {
        const key = readKey(text, q);
        if (!key) throw new CommandRejected(`${where}: cannot read its options "${clip(text)}"; write [key=value:key=value]file`);
        const value = readToken(text, key.end, ':]');
        if (value.marks.length > 0) throw new CommandRejected(`${where}: a placeholder can only be the slave's file, not an option`);
        checkSlaveOption(key.key, value.value, where);
        q = value.end;
        if (text[q] === ']') break;
        if (q >= text.length) throw new CommandRejected(`${where}: its options are not closed with "]"`);
        q++;
      }
    }
    fileStart = q + 1;
  }
  return slaveFile(text.slice(fileStart), slave.marks, where, outputFolder);
}

function slaveFile(file: string, marks: { index: number; reading: MarkReading }[], where: string, outputFolder: boolean): TeeSlaveFile {
  const index = markIndex(file);
  if (index !== undefined) {
    const reading = marks.find((mark) => mark.index === index)?.reading;
    if (reading !== 'bare' && reading !== 'quoted') throw new CommandRejected(`${where}: its placeholder is inside an unclosed quote`);
    return { placeholder: index, quoting: reading };
  }
  if ([...file].some((c) => markIndex(c) !== undefined)) {
    throw new CommandRejected(`${where}: its file must be a placeholder alone, such as {{out_1}}, or a relative name, not both`);
  }
  if (!outputFolder)
    throw new CommandRejected(`${where}: its file "${clip(file)}" must be an output placeholder declared in output_files, e.g. {{out_1}}`);
  return { name: checkRelativeFile(file, where, { role: 'output' }) };
}

function checkSlaveOption(key: string, value: string, where: string): void {
  const refuse = (why: string): never => {
    throw new CommandRejected(`${where}: option "${clip(key)}" ${why}`);
  };
  if (key === 'f') {
    const format = value.toLowerCase();
    if (!/^[a-z0-9_]+$/.test(format) || !OUTPUT_FORMATS.has(format) || MULTI_FILE_FORMATS.has(format)) {
      refuse(`"${clip(value)}" is not allowed; a slave writes one file, in a format allowed for outputs`);
    }
  } else if (key === 'select') {
    if (!/^[A-Za-z0-9:,#.]*$/.test(value)) refuse('takes stream specifiers such as v or 0:a');
  } else if (key === 'bsfs' || key.startsWith('bsfs/')) {
    if (!/^[A-Za-z0-9_,=.+-]+$/.test(value)) refuse('takes bitstream filter names');
    for (const item of value.split(',')) {
      if (!BITSTREAM_FILTERS.has(item.split('=')[0])) refuse(`names "${clip(item)}", which is unknown or not allowed`);
    }
  } else if (key === 'onfail') {
    if (value !== 'abort' && value !== 'ignore') refuse('takes abort or ignore');
  } else if (key === 'use_fifo' || key === 'fifo_options') {
    refuse('is not allowed (the fifo muxer is not available)');
  } else if (SLAVE_MUXER_OPTIONS.has(key)) {
    if (!/^[A-Za-z0-9+_.-]*$/.test(value)) refuse('takes letters, digits and "+_.-"');
  } else {
    refuse(
      `is not allowed (tee gives it unchecked to the slave's muxer and file); allowed: f, select, bsfs, onfail, ${[...SLAVE_MUXER_OPTIONS].join(', ')}`,
    );
  }
}
