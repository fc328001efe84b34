// The ffmpeg options, formats and bitstream filters a user command may use. Everything not listed is
// refused. Whether an option takes a value must match ffmpeg exactly: if the table said "-shortest"
// took a value, the token after it would escape the file checks while ffmpeg opened it as an output.
// parse.test.ts checks every entry against the real ffmpeg binary.

/**
 * Where an option may appear. 'global' applies to the whole run wherever it is written; the others
 * belong to the next input (-i) or output file.
 */
export type OptionScope = 'global' | 'input' | 'output' | 'file';

/** What the option's value is, and so how it is checked. */
export type ValueKind =
  | 'none' // a flag, takes no value
  | 'text' // a value with no file meaning (numbers, names, expressions, metadata)
  | 'codec' // an encoder/decoder name or "copy"
  | 'format' // a muxer/demuxer name, checked against the format lists
  | 'filtergraph' // parsed by filtergraph.ts and checked by filter-check.ts
  | 'relativeFile' // a file (or %d pattern) relative to the working folder
  | 'inputFile' // a file ffmpeg reads: an {{in_...}} placeholder or a relative file
  | 'outputFile' // a file ffmpeg writes: an {{out_...}} placeholder or a relative file
  | 'plainName' // a file name without folders (ffmpeg puts it next to the output)
  | 'encoderParams' // key=value:key=value for x264/x265, keys checked
  | 'bsfList' // comma-separated bitstream filters, names checked
  | 'patternType' // image2 pattern_type
  | 'muxer' // a muxer for segments, checked like -f for outputs
  | 'streamMap'; // hls var_stream_map: its names become file names, so no paths

export interface OptionSpec {
  name: string;
  scope: OptionScope;
  value: ValueKind;
}

function options(scope: OptionScope, value: ValueKind, names: string[]): OptionSpec[] {
  return names.map((name) => ({ name, scope, value }));
}

// ffmpeg's own options (ffmpeg_opt.c), plus AVOptions of codecs and (de)muxers, which always take a value.
// Lists of names stay packed, several to a line (prettier would put one on each line).
// prettier-ignore
const OPTION_LIST: OptionSpec[] = [
  // global flags and settings
  ...options('global', 'none', ['y', 'n', 'nostdin', 'hide_banner', 'stats', 'nostats', 'ignore_unknown',
    'copy_unknown', 'copyts', 'start_at_zero', 'xerror', 'benchmark']),
  ...options('global', 'text', ['loglevel', 'v', 'filter_threads', 'filter_complex_threads', 'vsync', 'async',
    'max_error_rate', 'stats_period']),
  ...options('global', 'filtergraph', ['filter_complex', 'lavfi']),

  // per-file options of ffmpeg itself
  ...options('file', 'format', ['f']),
  ...options('file', 'codec', ['c', 'codec', 'vcodec', 'acodec', 'scodec']),
  ...options('file', 'text', ['t', 'to', 'ss', 'r', 's', 'pix_fmt', 'ar', 'ac', 'sample_fmt', 'tag', 'vtag']),
  ...options('file', 'none', ['vn', 'an', 'sn', 'dn', 'bitexact']),
  ...options('input', 'text', ['sseof', 'itsoffset', 'itsscale', 'stream_loop', 'thread_queue_size', 'readrate',
    'discard', 'seek_timestamp', 'autorotate']),
  // -noautorotate is ffmpeg's negated form of -autorotate, which (unlike it) takes no value
  ...options('input', 'none', ['accurate_seek', 'noaccurate_seek', 'noautorotate', 'fix_sub_duration', 're']),
  ...options('output', 'text', ['atag', 'map', 'map_metadata', 'map_chapters', 'metadata', 'disposition', 'frames',
    'vframes', 'aframes', 'dframes', 'fs', 'q', 'qscale', 'profile', 'b', 'ab', 'aq', 'aspect', 'timecode',
    'fps_mode', 'force_key_frames', 'enc_time_base', 'time_base', 'muxdelay', 'muxpreload',
    'max_muxing_queue_size', 'muxing_queue_data_threshold', 'fpsmax', 'pass', 'apad', 'copypriorss',
    'autoscale']),
  ...options('output', 'none', ['shortest', 'copyinkf', 'force_fps', 'noautoscale']),
  ...options('output', 'filtergraph', ['vf', 'af', 'filter']),
  ...options('output', 'bsfList', ['bsf']),
  // -attach adds a file (a font, a cover) as an attachment stream; -dump_attachment writes one out.
  ...options('output', 'inputFile', ['attach']),
  ...options('input', 'outputFile', ['dump_attachment']),

  // encoder AVOptions
  ...options('file', 'text', ['vb', 'crf', 'qp', 'preset', 'tune', 'level', 'g', 'keyint_min', 'sc_threshold', 'bf',
    'refs', 'threads', 'strict', 'flags', 'qmin', 'qmax', 'maxrate', 'minrate', 'bufsize', 'trellis', 'coder',
    'color_primaries', 'color_trc', 'colorspace', 'color_range', 'compression_level', 'lossless', 'quality',
    'speed', 'deadline', 'cpu-used', 'row-mt', 'tile-columns', 'tile-rows', 'lag-in-frames', 'auto-alt-ref',
    'aq-mode', 'channel_layout', 'cutoff', 'vbr', 'application', 'frame_duration', 'slices', 'forced-idr',
    'nal-hrd', 'skip_frame', 'err_detect']),
  ...options('file', 'encoderParams', ['x264-params', 'x265-params']),

  // demuxer AVOptions
  ...options('input', 'text', ['framerate', 'start_number', 'loop', 'video_size', 'pixel_format', 'sample_rate',
    'channels', 'analyzeduration', 'probesize', 'fflags', 'avoid_negative_ts']),
  ...options('input', 'patternType', ['pattern_type']),

  // muxer AVOptions
  ...options('output', 'text', ['movflags', 'brand', 'write_tmcd', 'frag_duration', 'min_frag_duration',
    'max_interleave_delta', 'id3v2_version', 'write_id3v1', 'write_xing', 'final_delay', 'update', 'frame_pts',
    'atomic_writing', 'hls_time', 'hls_init_time', 'hls_list_size', 'hls_delete_threshold', 'hls_playlist_type',
    'hls_flags', 'hls_segment_type', 'hls_start_number_source', 'seg_duration', 'segment_time',
    'segment_times', 'segment_frames', 'segment_list_type', 'segment_list_size', 'reset_timestamps']),
  ...options('output', 'muxer', ['segment_format']),
  ...options('output', 'streamMap', ['var_stream_map']),
  ...options('output', 'relativeFile', ['hls_segment_filename']),
  ...options('output', 'plainName', ['master_pl_name', 'hls_fmp4_init_filename']),
  ...options('output', 'outputFile', ['segment_list']),
];

/**
 * Some AVOptions exist for both inputs and outputs (the demuxer and the muxer each have one), so the
 * table lists them once with scope 'input' but they are also accepted for outputs.
 */
const ALSO_FOR_OUTPUTS = new Set(['start_number', 'loop', 'fflags', 'avoid_negative_ts']);

export const OPTION_TABLE: ReadonlyMap<string, OptionSpec> = new Map(OPTION_LIST.map((spec) => [spec.name, spec]));

/** True when the option may be given for this kind of file. */
export function optionFitsFile(spec: OptionSpec, file: 'input' | 'output'): boolean {
  if (spec.scope === 'file' || spec.scope === file) return true;
  return file === 'output' && ALSO_FOR_OUTPUTS.has(spec.name);
}

/** Options refused on purpose, with the reason shown to the user. */
// prettier-ignore
export const REFUSED_OPTIONS: ReadonlyMap<string, string> = new Map(Object.entries({
  filter_script: 'it reads a file',
  filter_complex_script: 'it reads a file',
  passlogfile: 'it names a file',
  vstats: 'it writes a file',
  vstats_file: 'it writes a file',
  sdp_file: 'it writes a file',
  report: 'it writes a file',
  progress: 'the service sets it',
  pre: 'it reads preset files',
  fpre: 'it reads preset files',
  vpre: 'it reads preset files',
  apre: 'it reads preset files',
  spre: 'it reads preset files',
  init_hw_device: 'hardware devices are not available',
  hwaccel: 'hardware devices are not available',
  hwaccel_device: 'hardware devices are not available',
  hwaccel_output_format: 'hardware devices are not available',
  filter_hw_device: 'hardware devices are not available',
  vaapi_device: 'hardware devices are not available',
  qsv_device: 'hardware devices are not available',
  stdin: 'the service runs ffmpeg without input',
  protocol_whitelist: 'it decides which protocols ffmpeg may open; the service sets it to local files only',
  protocol_blacklist: 'it decides which protocols ffmpeg may open; the service sets the list',
  format_whitelist: 'it decides which formats ffmpeg may open; the service decides',
  safe: 'it decides whether concat lists may name any path; the service sets -safe 1',
  max_pixels: 'it lifts the picture size limit that stops decompression bombs; the service sets it',
  codec_whitelist: 'it decides which codecs ffmpeg may open; the service decides',
  max_alloc: "it changes ffmpeg's memory allocation limit",
  enable_drefs: 'it lets a QuickTime file open other files it names',
  use_absolute_path: 'it lets a QuickTime file open other files by absolute path',
  timelimit: 'the service sets its own time limit',
  hls_key_info_file: 'it reads a file',
  hls_enc_key: 'encrypted HLS is not supported',
  segment_format_options: 'it passes unchecked options to a muxer',
  hls_segment_options: 'it passes unchecked options to a muxer',
  format_options: 'it passes unchecked options to a muxer',
  graph_file: 'it reads a file',
  dumpgraph: 'it is not supported',
  headers: 'the service does not open network inputs',
  user_agent: 'the service does not open network inputs',
  listen: 'the service does not open network connections',
}));

// Formats (-f). Names as `ffmpeg -muxers` / `-demuxers` print them.
// prettier-ignore
export const INPUT_FORMATS: ReadonlySet<string> = new Set([
  'mov', 'mp4', 'm4a', '3gp', 'matroska', 'webm', 'avi', 'flv', 'mpegts', 'mpeg', 'mpegvideo', 'm4v', 'mxf',
  'asf', 'nut', 'dv', 'ivf', 'h264', 'hevc', 'mjpeg', 'rawvideo', 'yuv4mpegpipe', 'gif', 'apng', 'image2',
  'mp3', 'aac', 'ac3', 'eac3', 'wav', 'w64', 'flac', 'ogg', 'wv', 'aiff', 'caf', 'amr', 's16le', 's16be', 's24le',
  's32le', 'f32le', 'f64le', 'u8', 'mulaw', 'alaw', 'srt', 'webvtt', 'ass', 'ffmetadata', 'lavfi', 'concat',
]);

// prettier-ignore
export const OUTPUT_FORMATS: ReadonlySet<string> = new Set([
  'mp4', 'mov', 'ipod', 'ismv', '3gp', 'f4v', 'matroska', 'webm', 'avi', 'flv', 'mpegts', 'mpeg', 'vob', 'dvd',
  'm4v', 'mxf', 'asf', 'nut', 'dv', 'ivf', 'h264', 'hevc', 'mpeg1video', 'mpeg2video', 'mjpeg', 'rawvideo',
  'yuv4mpegpipe', 'gif', 'apng', 'webp', 'avif', 'image2', 'mp3', 'mp2', 'adts', 'ac3', 'eac3', 'wav', 'w64',
  'flac', 'ogg', 'oga', 'ogv', 'opus', 'spx', 'wv', 'aiff', 'caf', 'amr', 's16le', 's16be', 's24le', 's32le',
  'f32le', 'f64le', 'u8', 'mulaw', 'alaw', 'srt', 'webvtt', 'ass', 'ttml', 'ffmetadata', 'null', 'hls', 'dash',
  'segment', 'stream_segment', 'ssegment', 'tee',
]);

/** Why a known but refused format is refused, for a clearer message than "not allowed". */
// prettier-ignore
export const REFUSED_FORMATS: ReadonlyMap<string, string> = new Map(Object.entries({
  fifo: 'it wraps other muxers without checks',
  fifo_test: 'it is a test muxer',
  image2pipe: 'pipes are not available',
  rtp: 'it uses the network',
  rtp_mpegts: 'it uses the network',
  rtsp: 'it uses the network',
  sap: 'it uses the network',
  sdp: 'it uses the network',
  hds: 'it is not supported',
  smoothstreaming: 'it is not supported',
  webm_chunk: 'it is not supported',
  webm_dash_manifest: 'it is not supported',
}));

// prettier-ignore
const DEVICE_FORMATS = new Set([
  'alsa', 'pulse', 'oss', 'jack', 'openal', 'sndio', 'fbdev', 'kmsgrab', 'x11grab', 'xcbgrab', 'video4linux2',
  'v4l2', 'iec61883', 'libdc1394', 'libcdio', 'dshow', 'gdigrab', 'vfwcap', 'avfoundation', 'decklink', 'sdl',
  'sdl2', 'opengl', 'caca', 'xv', 'audiotoolbox', 'android_camera',
]);

/** A reason to refuse `-f name` for this kind of file, or undefined when it is allowed. */
export function formatRefusal(name: string, file: 'input' | 'output'): string | undefined {
  if ((file === 'input' ? INPUT_FORMATS : OUTPUT_FORMATS).has(name)) return undefined;
  if (DEVICE_FORMATS.has(name)) return 'it is a capture or playback device';
  const refused = REFUSED_FORMATS.get(name);
  if (refused) return refused;
  if (name.endsWith('_pipe')) return 'pipes are not available';
  if (file === 'output' && INPUT_FORMATS.has(name)) return 'it can only be used for inputs';
  if (file === 'input' && (name === 'hls' || name === 'dash')) return 'it opens the files a playlist names';
  if (file === 'input' && OUTPUT_FORMATS.has(name)) return 'it can only be used for outputs';
  return 'it is unknown or not supported';
}

/** Bitstream filters (-bsf). None of them opens files. */
// prettier-ignore
export const BITSTREAM_FILTERS: ReadonlySet<string> = new Set([
  'aac_adtstoasc', 'av1_frame_merge', 'av1_frame_split', 'av1_metadata', 'chomp', 'dump_extra', 'dca_core',
  'dv_error_marker', 'eac3_core', 'extract_extradata', 'filter_units', 'h264_metadata', 'h264_mp4toannexb',
  'h264_redundant_pps', 'hevc_metadata', 'hevc_mp4toannexb', 'mjpeg2jpeg', 'mpeg2_metadata',
  'mpeg4_unpack_bframes', 'mov2textsub', 'noise', 'null', 'opus_metadata', 'pcm_rechunk', 'pgs_frame_merge',
  'prores_metadata', 'remove_extra', 'setts', 'text2movsub', 'truehd_core', 'vp9_metadata', 'vp9_raw_reorder',
  'vp9_superframe', 'vp9_superframe_split',
]);

// -x264-params / -x265-params keys. An allowlist because both libraries accept keys that read or
// write files (x264: stats, cqmfile, dump-yuv; x265: csv, analysis-save/-load, zonefile, ...).
// prettier-ignore
export const ENCODER_PARAM_KEYS: Readonly<Record<string, ReadonlySet<string>>> = {
  'x264-params': new Set([
    'keyint', 'min-keyint', 'scenecut', 'no-scenecut', 'intra-refresh', 'bframes', 'b-adapt', 'b-bias',
    'b-pyramid', 'open-gop', 'cabac', 'no-cabac', 'ref', 'deblock', 'no-deblock', 'slices', 'slice-max-size',
    'slice-max-mbs', 'tff', 'bff', 'constrained-intra', 'pulldown', 'fake-interlaced', 'frame-packing', 'crf',
    'crf-max', 'qp', 'bitrate', 'vbv-maxrate', 'vbv-bufsize', 'vbv-init', 'qpmin', 'qpmax', 'qpstep',
    'ratetol', 'ipratio', 'pbratio', 'chroma-qp-offset', 'aq-mode', 'aq-strength', 'mbtree', 'no-mbtree',
    'qcomp', 'cplxblur', 'qblur', 'zones', 'partitions', 'direct', 'weightb', 'no-weightb', 'weightp', 'me',
    'merange', 'mvrange', 'mvrange-thread', 'subme', 'psy', 'no-psy', 'psy-rd', 'mixed-refs', 'no-mixed-refs',
    'chroma-me', 'no-chroma-me', '8x8dct', 'no-8x8dct', 'trellis', 'fast-pskip', 'no-fast-pskip',
    'dct-decimate', 'no-dct-decimate', 'nr', 'deadzone-inter', 'deadzone-intra', 'cqm', 'level',
    'bluray-compat', 'avcintra-class', 'stitchable', 'overscan', 'videoformat', 'range', 'colorprim',
    'transfer', 'colormatrix', 'chromaloc', 'mastering-display', 'cll', 'alternative-transfer', 'nal-hrd',
    'filler', 'pic-struct', 'crop-rect', 'sar', 'fps', 'force-cfr', 'aud', 'annexb', 'threads',
    'lookahead-threads', 'sliced-threads', 'sync-lookahead', 'rc-lookahead', 'non-deterministic',
    'cpu-independent', 'log-level', 'psnr', 'ssim', 'repeat-headers',
  ]),
  'x265-params': new Set([
    'keyint', 'min-keyint', 'scenecut', 'no-scenecut', 'scenecut-bias', 'bframes', 'b-adapt', 'bframe-bias',
    'b-pyramid', 'no-b-pyramid', 'ref', 'rc-lookahead', 'lookahead-slices', 'crf', 'crf-max', 'crf-min', 'qp',
    'bitrate', 'vbv-maxrate', 'vbv-bufsize', 'vbv-init', 'qpmin', 'qpmax', 'qpstep', 'aq-mode', 'aq-strength',
    'aq-motion', 'qg-size', 'cutree', 'no-cutree', 'qcomp', 'ipratio', 'pbratio', 'cbqpoffs', 'crqpoffs', 'rd',
    'rdoq-level', 'psy-rd', 'psy-rdoq', 'sao', 'no-sao', 'limit-sao', 'deblock', 'no-deblock',
    'strong-intra-smoothing', 'no-strong-intra-smoothing', 'ctu', 'min-cu-size', 'max-tu-size',
    'tu-intra-depth', 'tu-inter-depth', 'limit-tu', 'me', 'subme', 'merange', 'max-merge', 'weightp', 'weightb',
    'no-weightp', 'no-weightb', 'rect', 'no-rect', 'amp', 'no-amp', 'early-skip', 'fast-intra', 'tskip',
    'tskip-fast', 'rd-refine', 'limit-modes', 'limit-refs', 'open-gop', 'no-open-gop', 'lossless',
    'cu-lossless', 'profile', 'level-idc', 'high-tier', 'no-high-tier', 'uhd-bd', 'repeat-headers', 'aud',
    'hrd', 'info', 'no-info', 'annexb', 'hdr', 'hdr-opt', 'hdr10', 'hdr10-opt', 'master-display', 'max-cll',
    'min-luma', 'max-luma', 'colorprim', 'transfer', 'colormatrix', 'range', 'chromaloc', 'sar', 'videoformat',
    'overscan', 'display-window', 'frame-threads', 'pools', 'numa-pools', 'wpp', 'no-wpp', 'pmode', 'pme',
    'slices', 'log-level', 'psnr', 'ssim', 'fades', 'radl', 'interlace', 'field', 'temporal-layers',
    'keyint', 'bframes',
  ]),
};

// image2 -pattern_type. 'glob' is allowed: the -i value after it may then hold the wildcards * and
// ?, still as a relative name without "..", so it only matches files inside the working folder.
// 'glob_sequence' (deprecated) and numeric values are refused.
export const PATTERN_TYPES: ReadonlySet<string> = new Set(['sequence', 'glob', 'none']);
