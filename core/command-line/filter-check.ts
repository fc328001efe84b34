// Checks every filter of a parsed filtergraph against an allowlist, and the values of the options
// that name files: a file a filter reads must be a whole placeholder or a relative name inside the
// working folder. Keyless values are checked as the option ffmpeg gives them to
// (filter-option-order.ts), since `drawtext=text=hi:/etc/passwd` sets textfile.
import { KeylessValueError, FILTER_OPTION_ORDER, optionNames } from './filter-option-order.ts';
import { FiltergraphSyntaxError, parseFiltergraph } from './filtergraph.ts';
import type { FilterInstance, ParsedGraph } from './filtergraph.ts';
import { FFMPEG_FILTERS } from './ffmpeg-names.ts';
import { checkFontPath, isFontPath } from './font-path.ts';
import { formatRefusal } from './option-table.ts';
import { CommandRejected } from './parsed-command.ts';
import { markIndex } from './placeholders.ts';
import { checkRelativeFile } from './relative-file.ts';

// Filters that only transform frames or samples, generate them from parameters, or read files through
// the options FILTER_RULES checks. Every one was checked against `ffmpeg -h filter=NAME` for options
// that open files (filter-check.test.ts re-checks).
// Lists of names stay packed, several to a line (prettier would put one on each line).
// prettier-ignore
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
  // reading files: only placeholders or relative names (FILTER_RULES)
  'subtitles', 'ass', 'movie', 'amovie', 'lut3d', 'lut1d',
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

// prettier-ignore
const REFUSED_FILTERS: ReadonlyMap<string, string> = new Map(Object.entries({
  sendcmd: 'it reads command files',
  asendcmd: 'it reads command files',
  zmq: 'it opens network sockets',
  azmq: 'it opens network sockets',
  ladspa: 'it loads plugins',
  lv2: 'it loads plugins',
  frei0r: 'it loads plugins',
  frei0r_src: 'it loads plugins',
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

interface FilterRule {
  /** Options naming a file the filter reads: a whole placeholder or a relative name. */
  readsFile?: readonly string[];
  /** Options naming a folder the filter reads: a relative name. */
  readsFolder?: readonly string[];
  /** Of those, the ones that read fonts: they may also name the system's font folders (font-path.ts). */
  readsFont?: readonly string[];
  /** Options refused, with the reason shown to the user. */
  refused?: ReadonlyMap<string, string>;
  /** Extra checks on option values; return a reason to refuse. */
  check?: (key: string, value: string) => string | undefined;
}

const MOVIE_RULE: FilterRule = {
  readsFile: ['filename'],
  refused: new Map([['format_opts', 'it passes options to the demuxer unchecked']]),
  check: (key, value) => {
    if (key !== 'format_name' && key !== 'f') return undefined;
    if (!/^[A-Za-z0-9_]+$/.test(value)) return `${key} takes a format name`;
    const format = value.toLowerCase(); // ffmpeg matches format names case-insensitively
    if (format === 'lavfi') return 'format lavfi would run a filtergraph the service does not check';
    const refusal = formatRefusal(format, 'input');
    return refusal ? `format ${format} is not allowed (${refusal})` : undefined;
  },
};

const SUBTITLES_RULE: FilterRule = { readsFile: ['filename', 'f'], readsFolder: ['fontsdir'], readsFont: ['fontsdir'] };

// prettier-ignore
export const FILTER_RULES: ReadonlyMap<string, FilterRule> = new Map(Object.entries({
  drawtext: {
    readsFile: ['fontfile', 'textfile'],
    readsFont: ['fontfile'],
    // fontconfig reads a pattern here, and a pattern can name a file (":file=/x.ttf").
    check: (key, value) =>
      key === 'font' && !/^[A-Za-z0-9 ._-]*$/.test(value)
        ? 'font takes a font family name (letters, digits, spaces, "._-"); use fontfile for a font file'
        : undefined,
  },
  subtitles: SUBTITLES_RULE,
  ass: SUBTITLES_RULE,
  movie: MOVIE_RULE,
  amovie: MOVIE_RULE,
  lut3d: { readsFile: ['file'] },
  lut1d: { readsFile: ['file'] },
  curves: { readsFile: ['psfile'], refused: new Map([['plot', 'it writes a file']]) },
  paletteuse: { refused: new Map([['debug_kdtree', 'it writes a file']]) },
} satisfies Record<string, FilterRule>));

// Without the declaration order, a keyless value could reach a file option unchecked.
for (const name of FILTER_RULES.keys()) {
  if (!FILTER_OPTION_ORDER[name]) throw new Error(`filter ${name} has file rules but no option order`);
}

const ALLOWED_FILTERS: ReadonlySet<string> = new Set(ALLOWED_FILTER_NAMES);

/** Names of the allowed filters (for tests and documentation). */
export function allowedFilterNames(): string[] {
  return [...ALLOWED_FILTERS];
}

/** The options of a filter that the checker handles: files, folders and refused options. */
export function checkedFilterOptions(name: string): { readsFile: string[]; readsFolder: string[]; refused: string[] } {
  const rule = FILTER_RULES.get(name);
  return {
    readsFile: [...(rule?.readsFile ?? [])],
    readsFolder: [...(rule?.readsFolder ?? [])],
    refused: [...(rule?.refused?.keys() ?? [])],
  };
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

/** A checked graph: null when ffmpeg cannot read it either; `ffmpegFailure` is ffmpeg's message for it. */
export interface GraphCheck {
  graph: ParsedGraph | null;
  /** What ffmpeg says when it creates this graph (an unknown filter, a syntax error), if it fails. */
  ffmpegFailure: string | null;
}

/**
 * Parses a filtergraph (placeholders already turned into marks) and refuses anything outside the
 * allowlist (CommandRejected). `where` names the option it came from (e.g. "-vf"), for messages.
 * What only ffmpeg judges (a filter it does not know, a graph it cannot read) is returned as
 * `ffmpegFailure`: every filter ffmpeg would create before it stops is still checked.
 */
export function checkFiltergraph(text: string, where: string): GraphCheck {
  let graph: ParsedGraph | null = null;
  let filters: FilterInstance[];
  let syntaxFailure: string | null = null;
  try {
    graph = parseFiltergraph(text);
    filters = graph.filters;
  } catch (error) {
    if (!(error instanceof FiltergraphSyntaxError)) throw error;
    if (error.ffmpegMessage === undefined) throw new CommandRejected(`invalid filtergraph in ${where}: ${error.message}`);
    filters = error.filtersBefore;
    syntaxFailure = error.ffmpegMessage;
  }
  let ffmpegFailure: string | null = null;
  for (const filter of filters) {
    const failure = checkFilter(filter, where);
    ffmpegFailure ??= failure ?? null;
  }
  return { graph, ffmpegFailure: ffmpegFailure ?? syntaxFailure };
}

/** Refuses what the service does not allow; returns ffmpeg's message when ffmpeg cannot create the filter. */
function checkFilter(filter: FilterInstance, where: string): string | undefined {
  const name = filter.name;
  if (!ALLOWED_FILTERS.has(name)) {
    const reason = refusalReason(name);
    if (reason) throw new CommandRejected(`filter "${name}" is not allowed in ${where} (${reason})`);
    if (FFMPEG_FILTERS.has(name)) throw new CommandRejected(`filter "${name}" in ${where} is not allowed`);
    return `No such filter: '${name}'`;
  }
  const rule = FILTER_RULES.get(name);
  const order = FILTER_OPTION_ORDER[name];
  let keys: (string | undefined)[] = filter.args.map((arg) => arg.key);
  if (rule && order) {
    try {
      keys = optionNames(order, filter.args);
    } catch (error) {
      if (!(error instanceof KeylessValueError)) throw error;
      // ffmpeg stops while it sets the options, before the filter opens any file.
      const rest = filter.args.slice(error.index).map((arg) => (arg.key === undefined ? arg.value : `${arg.key}=${arg.value}`));
      return `No option name near '${rest.join(':')}'`;
    }
  }
  // Every value, repeats included: ffmpeg sets each one in turn.
  filter.args.forEach(({ key: written, value }, i) => {
    const key = keys[i];
    if (written?.includes('/')) {
      // Newer ffmpeg reads the value of `/key=path` from a file.
      throw new CommandRejected(`option "${written}" of filter "${name}" in ${where} is not allowed (it reads a file)`);
    }
    if (key === undefined || !rule) return;
    const option = `option "${key}" of filter "${name}" in ${where}`;
    const refused = rule.refused?.get(key);
    if (refused) throw new CommandRejected(`${option} is not allowed (${refused})`);
    if (rule.readsFile?.includes(key)) checkFileValue(value, option, rule.readsFont?.includes(key) ?? false);
    if (rule.readsFolder?.includes(key)) {
      if ([...value].some((c) => markIndex(c) !== undefined)) {
        throw new CommandRejected(`${option} names a folder, so it cannot be a file placeholder`);
      }
      if (rule.readsFont?.includes(key) && isFontPath(value)) checkFontPath(value, option, 'folder');
      else checkRelativeFile(value, option, { role: 'folder' });
    }
    const problem = rule.check?.(key, value);
    if (problem) throw new CommandRejected(`filter "${name}" in ${where}: ${problem}`);
  });
  return enableFailure(filter);
}

/**
 * A timeline expression (`enable=...`) with unbalanced parentheses: ffmpeg cannot parse it and stops
 * once it has created the filter. A comma left unquoted inside `enable='between(t,1,2)'` cuts the
 * expression there, which is how most of these come about.
 */
function enableFailure(filter: FilterInstance): string | undefined {
  const enable = filter.args.find((arg) => arg.key === 'enable');
  if (enable === undefined) return undefined;
  const opened = enable.value.split('(').length - 1;
  const closed = enable.value.split(')').length - 1;
  return opened === closed ? undefined : `Error when evaluating the expression '${enable.value}' for enable`;
}

/** A file a filter reads: exactly one placeholder, or a relative name without one (or a system font's path). */
function checkFileValue(value: string, option: string, font: boolean): void {
  const marks = [...value].filter((c) => markIndex(c) !== undefined).length;
  if (marks === 0) {
    if (font && isFontPath(value)) checkFontPath(value, option, 'file');
    else checkRelativeFile(value, option, { role: 'input' });
  } else if (marks > 1 || value.length !== 1) {
    throw new CommandRejected(`${option} must be a placeholder alone, such as {{in_1}}, or a relative name, not both`);
  }
}
