// Which option a value without a key sets. ffmpeg gives it to the option declared after the one set
// before it, even after a key=value (`drawtext=text=a:b` sets textfile to "b"), so the checker has
// to know the declaration order of every filter with options that read or write files.
//
// The tables list each filter's own options in declaration order, as `ffmpeg -h filter=NAME` prints
// them (without the named constants); options that set the same field (aliases such as filename/f)
// share a group. filter-option-order.test.ts checks every table against the real binary.
import type { FilterArg } from './filtergraph.ts';

/** movie and amovie declare the same options. */
const MOVIE_OPTIONS = [
  ['filename'],
  ['format_name', 'f'],
  ['stream_index', 'si'],
  ['seek_point', 'sp'],
  ['streams', 's'],
  ['loop'],
  ['discontinuity'],
  ['dec_threads'],
  ['format_opts'],
];

export const FILTER_OPTION_ORDER: Readonly<Record<string, readonly (readonly string[])[]>> = {
  drawtext: [
    ['fontfile'],
    ['text'],
    ['textfile'],
    ['fontcolor'],
    ['fontcolor_expr'],
    ['boxcolor'],
    ['bordercolor'],
    ['shadowcolor'],
    ['box'],
    ['boxborderw'],
    ['line_spacing'],
    ['fontsize'],
    ['x'],
    ['y'],
    ['shadowx'],
    ['shadowy'],
    ['borderw'],
    ['tabsize'],
    ['basetime'],
    ['font'],
    ['expansion'],
    ['timecode'],
    ['tc24hmax'],
    ['timecode_rate', 'r', 'rate'],
    ['reload'],
    ['alpha'],
    ['fix_bounds'],
    ['start_number'],
    ['text_source'],
    ['text_shaping'],
    ['ft_load_flags'],
  ],
  subtitles: [['filename', 'f'], ['original_size'], ['fontsdir'], ['alpha'], ['charenc'], ['stream_index', 'si'], ['force_style']],
  ass: [['filename', 'f'], ['original_size'], ['fontsdir'], ['alpha'], ['shaping']],
  movie: MOVIE_OPTIONS,
  amovie: MOVIE_OPTIONS,
  lut3d: [['file'], ['clut'], ['interp']],
  lut1d: [['file'], ['interp']],
  curves: [['preset'], ['master', 'm'], ['red', 'r'], ['green', 'g'], ['blue', 'b'], ['all'], ['psfile'], ['plot']],
  paletteuse: [
    ['dither'],
    ['bayer_scale'],
    ['diff_mode'],
    ['new'],
    ['alpha_threshold'],
    ['use_alpha'],
    ['debug_kdtree'],
    ['color_search'],
    ['mean_err'],
    ['debug_accuracy'],
  ],
};

/** A value without a key when no option is left for it; `index` is that value's position. */
export class KeylessValueError extends Error {
  readonly index: number;
  constructor(message: string, index: number) {
    super(message);
    this.index = index;
  }
}

/**
 * The name of the option each value sets, following process_options (libavfilter/avfilter.c) as
 * Debian's ffmpeg 5.1 behaves: a cursor walks the declared options, skipping aliases of the one it
 * last offered; a keyless value takes the option under the cursor; a key=value moves the cursor to
 * that option (or back before the first one when the key is not one of the filter's own options,
 * such as enable). Throws KeylessValueError for a keyless value when no option is left.
 */
export function optionNames(groups: readonly (readonly string[])[], args: readonly FilterArg[]): string[] {
  const options = groups.flatMap((names, group) => names.map((name) => ({ name, group })));
  let cursor = -1; // -1: before the first option (av_opt_next's NULL)
  let offeredGroup = -1;
  return args.map((arg, i) => {
    let offered: string | undefined;
    for (;;) {
      cursor++;
      if (cursor >= options.length) {
        cursor = -1;
        break;
      }
      if (options[cursor].group === offeredGroup) continue;
      offeredGroup = options[cursor].group;
      offered = options[cursor].name;
      break;
    }
    if (arg.key !== undefined) {
      cursor = options.findIndex((option) => option.name === arg.key);
      return arg.key;
    }
    if (offered === undefined) throw new KeylessValueError(`value ${i + 1} has no key and no option is left for it`, i);
    return offered;
  });
}
