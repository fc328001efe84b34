// Parses ffmpeg filtergraph text the way libavfilter does (graphparser.c and process_options in
// avfilter.c, ffmpeg 5.1) and checks every filter against an allowlist. The parser must unquote
// exactly like ffmpeg: a name written `'mo'vie` or `mo\vie` is the filter "movie" to ffmpeg, so it
// must be "movie" to the checker too.
import { CommandRejected } from './parsed-command.ts';

export interface FilterInstance {
  /** Filter name as ffmpeg resolves it (quotes and escapes removed, `@instance` cut off). */
  name: string;
  /** The `@instance` suffix, if any. */
  instance?: string;
  /** `key=value` options, last value wins as in ffmpeg. */
  options: Record<string, string>;
  /** Values given without a key; ffmpeg assigns them to the filter's options in declaration order. */
  positional: string[];
  /** Every value in the order written; `key` is undefined for a value given without a key. */
  args: { key?: string; value: string }[];
  inputLabels: string[];
  outputLabels: string[];
}

export class FiltergraphSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FiltergraphSyntaxError';
  }
}

const WHITESPACE = ' \n\t\r';
const MAX_FILTERS = 500;

/** Port of av_get_token: reads up to an unquoted, unescaped char of `terms`, removing one level of quoting. */
function readToken(text: string, from: number, terms: string): { value: string; end: number } {
  let p = skipWhitespace(text, from);
  let out = '';
  let protectedLength = 0; // trailing whitespace is trimmed, except what was quoted or escaped
  while (p < text.length && !terms.includes(text[p])) {
    const c = text[p++];
    if (c === '\\' && p < text.length) {
      out += text[p++];
      protectedLength = out.length;
    } else if (c === "'") {
      while (p < text.length && text[p] !== "'") out += text[p++];
      if (p < text.length) {
        p++;
        protectedLength = out.length;
      }
    } else {
      out += c;
    }
  }
  let length = out.length;
  while (length > protectedLength && WHITESPACE.includes(out[length - 1])) length--;
  return { value: out.slice(0, length), end: p };
}

function skipWhitespace(text: string, from: number): number {
  let p = from;
  while (p < text.length && WHITESPACE.includes(text[p])) p++;
  return p;
}

function readLabels(text: string, from: number, labels: string[]): number {
  let p = from;
  while (text[p] === '[') {
    const { value, end } = readToken(text, p + 1, ']');
    if (value === '') throw new FiltergraphSyntaxError(`empty link label near "${text.slice(p, p + 20)}"`);
    if (text[end] !== ']') throw new FiltergraphSyntaxError(`unclosed '[' near "${text.slice(p, p + 20)}"`);
    labels.push(value);
    p = skipWhitespace(text, end + 1);
  }
  return p;
}

function isKeyChar(c: string | undefined): boolean {
  return c !== undefined && /[A-Za-z0-9\-_/.]/.test(c);
}

/** Port of get_key in av_opt_get_key_value: a key is [A-Za-z0-9-_/.]* followed by optional spaces and '='. */
function readKey(args: string, from: number): { key: string; end: number } | undefined {
  let p = skipWhitespace(args, from);
  const start = p;
  while (isKeyChar(args[p])) p++;
  const key = args.slice(start, p);
  p = skipWhitespace(args, p);
  if (args[p] !== '=') return undefined;
  return { key, end: p + 1 };
}

/**
 * Port of process_options: `:`-separated values, each `key=value` or keyless. ffmpeg 5.1 gives a
 * keyless value to the option declared after the previous one, even after a `key=value`
 * (`drawtext=text=a:b` sets textfile to "b"), which the checker has to keep in mind.
 */
function parseFilterArgs(args: string, filter: FilterInstance): void {
  let p = 0;
  while (p < args.length) {
    const key = readKey(args, p);
    const { value, end } = readToken(args, key ? key.end : p, ':');
    p = end < args.length ? end + 1 : end;
    if (key) {
      if (key.key === '') throw new FiltergraphSyntaxError(`filter "${filter.name}": option with an empty name`);
      filter.options[key.key] = value;
      filter.args.push({ key: key.key, value });
    } else {
      filter.positional.push(value);
      filter.args.push({ value });
    }
  }
}

/** Splits `name@instance` like create_filter does. */
function splitInstance(fullName: string): { name: string; instance?: string } {
  const at = fullName.indexOf('@');
  if (at < 0 || at === fullName.length - 1) return { name: fullName };
  return { name: fullName.slice(0, at), instance: fullName.slice(at + 1) };
}

/** Parses a filtergraph (`-vf`, `-af`, `-filter_complex`, a lavfi input) into its filters. */
export function parseFiltergraph(text: string): FilterInstance[] {
  const filters: FilterInstance[] = [];
  let p = skipWhitespace(text, 0);
  if (text.startsWith('sws_flags=', p)) {
    // Graph-wide scaler flags; ffmpeg appends them to every scale filter's options.
    const end = text.indexOf(';', p);
    if (end < 0) throw new FiltergraphSyntaxError('sws_flags is not terminated with ";"');
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
    p = nameToken.end;
    if (nameToken.value === '') {
      throw new FiltergraphSyntaxError(`missing filter name near "${text.slice(Math.max(0, p - 10), p + 10)}"`);
    }
    const filter: FilterInstance = {
      ...splitInstance(nameToken.value),
      options: {},
      positional: [],
      args: [],
      inputLabels,
      outputLabels: [],
    };
    if (text[p] === '=') {
      const args = readToken(text, p + 1, '[],;');
      p = args.end;
      parseFilterArgs(args.value, filter);
    }
    p = readLabels(text, p, filter.outputLabels);
    p = skipWhitespace(text, p);
    separator = text[p];
    p++;
    filters.push(filter);
  } while (separator === ',' || separator === ';');
  if (separator !== undefined) {
    throw new FiltergraphSyntaxError(`cannot parse the graph from "${text.slice(p - 1, p + 29)}"`);
  }
  return filters;
}

interface FilterRule {
  /** Options refused for this filter, with the reason shown to the user. */
  refusedOptions?: ReadonlyMap<string, string>;
  /**
   * How many leading keyless values are allowed (they map to options in declaration order, so the
   * first ones must be harmless). When set, keyless values after a `key=value` are refused too.
   */
  maxPositional?: number;
  /** Extra checks on option values; return a reason to refuse. */
  checkOption?: (key: string, value: string) => string | undefined;
}

const NO_RULE: FilterRule = {};

// Filters that only transform frames or samples, or generate them from parameters. Every one was
// checked against `ffmpeg -h filter=NAME` for options that open files (filtergraph.test.ts re-checks).
const ALLOWED_FILTER_NAMES = [
  // video geometry, timing, format
  'scale', 'scale2ref', 'crop', 'cropdetect', 'pad', 'tpad', 'fps', 'framerate', 'framestep', 'format', 'setsar',
  'setdar', 'setparams', 'setrange', 'setfield', 'fieldorder', 'settb', 'setpts', 'trim', 'transpose', 'hflip',
  'vflip', 'rotate', 'shear', 'perspective', 'lenscorrection', 'v360', 'fillborders', 'tile', 'untile', 'zoompan',
  'minterpolate', 'mpdecimate', 'decimate', 'select', 'reverse', 'loop', 'freezeframes', 'swaprect', 'scroll',
  // composition
  'overlay', 'hstack', 'vstack', 'xstack', 'concat', 'split', 'xfade', 'blend', 'tblend', 'tmix', 'mix',
  'alphamerge', 'alphaextract', 'premultiply', 'unpremultiply', 'maskedmerge', 'maskedclamp', 'interleave',
  'streamselect', 'extractplanes', 'mergeplanes', 'shuffleplanes', 'swapuv', 'displace', 'remap', 'haldclut',
  'lut2', 'tlut2', 'stereo3d',
  // drawing and colour
  'drawbox', 'drawgrid', 'drawtext', 'fade', 'eq', 'hue', 'huesaturation', 'colorchannelmixer', 'colorbalance',
  'colorlevels', 'colorcontrast', 'colorcorrect', 'colortemperature', 'colorize', 'colorhold', 'chromahold',
  'colorspace', 'colormatrix', 'zscale', 'curves', 'lut', 'lutrgb', 'lutyuv', 'vibrance', 'exposure', 'monochrome',
  'negate', 'vignette', 'chromakey', 'colorkey', 'hsvkey', 'lumakey', 'despill', 'geq', 'palettegen', 'paletteuse',
  'pixelize', 'noise', 'rgbashift', 'chromashift', 'grayworld', 'histeq', 'threshold',
  // sharpen, blur, denoise, deinterlace
  'unsharp', 'cas', 'boxblur', 'gblur', 'avgblur', 'smartblur', 'dblur', 'median', 'xmedian', 'tmedian', 'deband',
  'deblock', 'deflicker', 'hqdn3d', 'nlmeans', 'atadenoise', 'vaguedenoiser', 'owdenoise', 'fftdnoiz', 'dctdnoiz',
  'bm3d', 'chromanr', 'removegrain', 'convolution', 'sobel', 'prewitt', 'roberts', 'scharr', 'kirsch', 'edgedetect',
  'erosion', 'dilation', 'deflate', 'inflate', 'yadif', 'bwdif', 'w3fdif', 'estdif', 'kerndeint', 'idet',
  'fieldmatch', 'pullup', 'telecine', 'detelecine', 'tinterlace', 'field', 'separatefields', 'weave', 'doubleweave',
  // analysis and visualisation
  'thumbnail', 'blackdetect', 'blackframe', 'freezedetect', 'scdet', 'signalstats', 'bbox', 'showinfo', 'histogram',
  'waveform', 'vectorscope', 'datascope', 'graphmonitor', 'showwaves', 'showwavespic', 'showspectrum',
  'showspectrumpic', 'showvolume', 'showfreqs', 'avectorscope', 'ahistogram', 'adrawgraph', 'drawgraph',
  'agraphmonitor',
  // video sources
  'color', 'nullsrc', 'testsrc', 'testsrc2', 'smptebars', 'smptehdbars', 'pal75bars', 'pal100bars', 'rgbtestsrc',
  'yuvtestsrc', 'allrgb', 'allyuv', 'mandelbrot', 'gradients', 'colorspectrum', 'colorchart', 'haldclutsrc',
  'mptestsrc', 'sierpinski',
  // audio
  'volume', 'loudnorm', 'dynaudnorm', 'speechnorm', 'compand', 'acompressor', 'alimiter', 'agate', 'aresample',
  'aformat', 'asetrate', 'atempo', 'afade', 'acrossfade', 'amix', 'amerge', 'join', 'pan', 'channelmap',
  'channelsplit', 'asplit', 'atrim', 'asetpts', 'asettb', 'asetnsamples', 'apad', 'aloop', 'areverse', 'aselect',
  'ainterleave', 'astreamselect', 'silenceremove', 'silencedetect', 'volumedetect', 'astats', 'ebur128',
  'replaygain', 'highpass', 'lowpass', 'bandpass', 'bandreject', 'allpass', 'highshelf', 'lowshelf', 'biquad',
  'equalizer', 'superequalizer', 'anequalizer', 'bass', 'treble', 'aecho', 'adelay', 'afftdn', 'anlmdn', 'chorus',
  'flanger', 'aphaser', 'tremolo', 'vibrato', 'apulsator', 'stereotools', 'stereowiden', 'extrastereo',
  'crossfeed', 'haas', 'earwax', 'bs2b', 'crystalizer', 'deesser', 'acontrast', 'acrusher', 'asoftclip',
  'dcshift', 'aemphasis', 'adeclick', 'adeclip', 'dialoguenhance', 'virtualbass', 'afreqshift', 'aphaseshift',
  'compensationdelay', 'ashowinfo', 'anull', 'acopy', 'null', 'copy', 'afir', 'aiir',
  // audio sources
  'anullsrc', 'sine', 'anoisesrc', 'aevalsrc', 'sinc', 'hilbert',
];

const SPECIAL_RULES: ReadonlyMap<string, FilterRule> = new Map(Object.entries({
  drawtext: {
    refusedOptions: new Map([['fontfile', 'it reads a font file'], ['textfile', 'it reads a text file']]),
    maxPositional: 0, // the first positional value is fontfile
    checkOption: (key, value) =>
      key === 'font' && !/^[A-Za-z0-9 ._-]*$/.test(value)
        ? 'font takes a font family name (letters, digits, spaces, "._-")'
        : undefined,
  },
  curves: {
    refusedOptions: new Map([['psfile', 'it reads a file'], ['plot', 'it writes a file']]),
    maxPositional: 1, // preset; psfile comes later in the option order
  },
  paletteuse: {
    refusedOptions: new Map([['debug_kdtree', 'it writes a file']]),
    maxPositional: 5, // dither, bayer_scale, diff_mode, new, alpha_threshold; then debug_kdtree
  },
} satisfies Record<string, FilterRule>));

const REFUSED_FILTERS: ReadonlyMap<string, string> = new Map(Object.entries({
  movie: 'it reads files',
  amovie: 'it reads files',
  subtitles: 'it reads files',
  ass: 'it reads files',
  sendcmd: 'it reads command files',
  asendcmd: 'it reads command files',
  zmq: 'it opens network sockets',
  azmq: 'it opens network sockets',
  ladspa: 'it loads plugins',
  lv2: 'it loads plugins',
  frei0r: 'it loads plugins',
  frei0r_src: 'it loads plugins',
  lut1d: 'it reads files',
  lut3d: 'it reads files',
  sofalizer: 'it reads files',
  ocr: 'it reads model files',
  sr: 'it loads model files',
  derain: 'it loads model files',
  arnndn: 'it loads model files',
  asr: 'it loads model files',
  nnedi: 'it reads a weights file',
  coreimage: 'it runs platform code',
  coreimagesrc: 'it runs platform code',
  vidstabdetect: 'it writes files',
  vidstabtransform: 'it reads files',
  deshake: 'it writes files',
  signature: 'it writes files',
  psnr: 'it writes files',
  ssim: 'it writes files',
  vmafmotion: 'it writes files',
  libvmaf: 'it reads and writes files',
  metadata: 'it writes files',
  ametadata: 'it writes files',
  showcqt: 'it reads font files',
  firequalizer: 'it writes files',
  removelogo: 'it reads files',
  find_rect: 'it reads files',
  cover_rect: 'it reads files',
  life: 'it reads files',
  cellauto: 'it reads files',
  flite: 'it reads files',
  libplacebo: 'it loads shaders',
  program_opencl: 'it loads kernels',
  openclsrc: 'it loads kernels',
  realtime: 'it slows processing down on purpose',
  arealtime: 'it slows processing down on purpose',
}));

const ALLOWED_FILTERS: ReadonlyMap<string, FilterRule> = new Map(
  ALLOWED_FILTER_NAMES.map((name) => [name, SPECIAL_RULES.get(name) ?? NO_RULE]),
);

/** Names of the allowed filters (for tests and documentation). */
export function allowedFilterNames(): string[] {
  return [...ALLOWED_FILTERS.keys()];
}

/** Options of allowed filters that are refused, by filter (for tests and documentation). */
export function refusedFilterOptions(name: string): string[] {
  return [...(ALLOWED_FILTERS.get(name)?.refusedOptions?.keys() ?? [])];
}

/** How many positional values a filter accepts (Infinity when unlimited). */
export function maxPositionalValues(name: string): number {
  return ALLOWED_FILTERS.get(name)?.maxPositional ?? Infinity;
}

function refusalReason(name: string): string | undefined {
  const refused = REFUSED_FILTERS.get(name);
  if (refused) return refused;
  if (name.startsWith('dnn_')) return 'it loads model files';
  if (/_(cuda|npp|opencl|vaapi|vulkan|qsv|videotoolbox)$/.test(name) || name.startsWith('hw')) {
    return 'it uses hardware devices';
  }
  return undefined;
}

/**
 * Parses a filtergraph and refuses anything outside the allowlist.
 * `where` names the option it came from (e.g. "-vf"), for the message.
 */
export function checkFiltergraph(text: string, where: string): FilterInstance[] {
  let filters: FilterInstance[];
  try {
    filters = parseFiltergraph(text);
  } catch (error) {
    if (error instanceof FiltergraphSyntaxError) {
      throw new CommandRejected(`invalid filtergraph in ${where}: ${error.message}`);
    }
    throw error;
  }
  for (const filter of filters) checkFilter(filter, where);
  return filters;
}

function checkFilter(filter: FilterInstance, where: string): void {
  const name = filter.name;
  const rule = ALLOWED_FILTERS.get(name);
  if (!rule) {
    const reason = refusalReason(name);
    throw new CommandRejected(
      reason
        ? `filter "${name}" is not allowed in ${where} (${reason})`
        : `filter "${name}" in ${where} is unknown or not allowed`,
    );
  }
  const maxPositional = rule.maxPositional ?? Infinity;
  const firstKeyed = filter.args.findIndex((arg) => arg.key !== undefined);
  if (Number.isFinite(maxPositional) && firstKeyed >= 0 && filter.args.slice(firstKeyed).some((a) => a.key === undefined)) {
    throw new CommandRejected(
      `filter "${name}" in ${where}: a value without a key after key=value options is not allowed ` +
        `(ffmpeg would give it to the next option in order); write every option as key=value`,
    );
  }
  if (filter.positional.length > maxPositional) {
    throw new CommandRejected(
      maxPositional === 0
        ? `filter "${name}" in ${where} takes key=value options only (e.g. ${name}=key=value:key=value)`
        : `filter "${name}" in ${where} takes at most ${maxPositional} value(s) without a key; name the others as key=value`,
    );
  }
  // Every keyed value, repeats included: ffmpeg sets each one in turn.
  for (const { key, value } of filter.args) {
    if (key === undefined) continue;
    if (key.includes('/')) {
      // Newer ffmpeg reads the value of `/key=path` from a file.
      throw new CommandRejected(`option "${key}" of filter "${name}" in ${where} is not allowed (it reads a file)`);
    }
    const refused = rule.refusedOptions?.get(key);
    if (refused) {
      throw new CommandRejected(`option "${key}" of filter "${name}" in ${where} is not allowed (${refused})`);
    }
    const problem = rule.checkOption?.(key, value);
    if (problem) throw new CommandRejected(`filter "${name}" in ${where}: ${problem}`);
  }
}
