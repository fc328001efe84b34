// Media metadata of one local file, read with ffprobe: the one place the service probes files.

import { basename, dirname } from 'node:path';
import type { Confinement } from '../confine/confinement.ts';
import { ProgramStart } from '../confine/program-start.ts';
import { DEFAULT_MEMORY_BYTES, DEFAULT_OPEN_FILES, DEFAULT_PROCESSES } from '../confine/limits.ts';
import type { MediaInfo } from './media-info.ts';
import { mimeTypeForMedia, fileExtension } from './mime.ts';

export interface ProbeOptions {
  /**
   * ffprobe runs confined to the file's folder (read-only): a playlist's entries can name only files
   * next to it. The folder must hold nothing else the caller would not show.
   */
  confinement: Confinement;
  /** As root: the uid ffprobe runs as; it must be able to read the folder. */
  uid?: number;
  /** RLIMIT_AS; default 4 GiB. A small, hostile picture can declare a huge size. */
  memoryBytes?: number;
  ffprobePath?: string; // default 'ffprobe'
  timeoutMs?: number; // default 30 s
  /** Largest ffprobe JSON accepted (a hostile file can declare thousands of streams); default 4 MiB. */
  maxOutputBytes?: number;
}

/** The subset of ffprobe's JSON that the mapping reads. */
interface ProbeStream {
  codec_type?: string;
  codec_name?: string;
  profile?: string;
  level?: number;
  width?: number;
  height?: number;
  pix_fmt?: string;
  r_frame_rate?: string;
  avg_frame_rate?: string;
  time_base?: string;
  bit_rate?: string;
  nb_frames?: string;
  disposition?: { attached_pic?: number };
}
interface ProbeFormat {
  format_name?: string;
  duration?: string;
  bit_rate?: string;
}
export interface ProbeOutput {
  streams?: ProbeStream[];
  format?: ProbeFormat;
}

/** `start`: a probe of `path` started ahead with the same options (ffprobeStart); default one made now. */
export async function probeMedia(path: string, opts: ProbeOptions, start?: ProgramStart): Promise<MediaInfo> {
  const output = await runFfprobe(path, opts, start ?? ffprobeStart(path, opts));
  return mediaInfoFromProbe(output, basename(path));
}

/**
 * ffprobe of `path` started ahead and held before main() where the confinement can (program-start.ts),
 * e.g. while ffmpeg still writes the file: it opens the file only once let go. Its folder must exist.
 */
export function ffprobeStart(path: string, opts: ProbeOptions): ProgramStart {
  return ProgramStart.ahead(opts.confinement, {
    program: opts.ffprobePath ?? 'ffprobe',
    args: ['-v', 'error', '-protocol_whitelist', 'file', '-print_format', 'json', '-show_format', '-show_streams', probeUrl(path, opts)],
    folder: dirname(path),
    writable: false,
    uid: opts.uid,
    limits: {
      memoryBytes: opts.memoryBytes ?? DEFAULT_MEMORY_BYTES,
      cpuSeconds: Math.ceil(timeoutOf(opts) / 1000) * 2,
      fileSizeBytes: 1, // it writes nothing
      openFiles: DEFAULT_OPEN_FILES,
      processes: DEFAULT_PROCESSES,
    },
  });
}

/**
 * `file:` + the path inside the sandbox: a name such as "x:y.mp4" is not taken for a protocol, and a
 * name starting with '-' not for an option. Playlists may open local files only, never the network.
 */
function probeUrl(path: string, opts: ProbeOptions): string {
  return `file:${opts.confinement.pathInFolder(dirname(path), basename(path))}`;
}

function timeoutOf(opts: ProbeOptions): number {
  return opts.timeoutMs ?? 30_000;
}

async function runFfprobe(path: string, opts: ProbeOptions, start: ProgramStart): Promise<ProbeOutput> {
  const name = basename(path);
  const url = probeUrl(path, opts);
  const timeoutMs = timeoutOf(opts);
  const maxOutput = opts.maxOutputBytes ?? 4 * 1024 * 1024;
  const child = await start.go();
  return new Promise((resolve, reject) => {
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    let failure: string | null = null;
    const stop = (why: string): void => {
      failure ??= why;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => stop(`timed out after ${timeoutMs} ms`), timeoutMs);
    child.stdout!.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > maxOutput) stop('too much output');
      else stdout.push(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`ffprobe cannot read ${name}: ${err.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      // ffprobe names the file in its messages; show the client its file name, not our paths.
      const message = stderr.trim().split(url).join(name).slice(-1000);
      if (failure || code !== 0) {
        reject(new Error(`ffprobe cannot read ${name}: ${failure ?? (message || `exit ${code ?? signal}`)}`));
        return;
      }
      try {
        resolve(JSON.parse(Buffer.concat(stdout).toString('utf8')) as ProbeOutput);
      } catch {
        reject(new Error(`ffprobe gave unreadable output for ${name}`));
      }
    });
  });
}

/** Maps ffprobe's JSON to MediaInfo; `fileName` decides the container name and MIME type. */
export function mediaInfoFromProbe(probe: ProbeOutput, fileName: string): MediaInfo {
  const streams = probe.streams ?? [];
  const format = probe.format ?? {};
  const videos = streams.filter((s) => s.codec_type === 'video' && s.disposition?.attached_pic !== 1);
  const audios = streams.filter((s) => s.codec_type === 'audio');
  const subtitles = streams.filter((s) => s.codec_type === 'subtitle');
  const video = videos[0];
  const audio = audios[0];

  const fileType = fileTypeOf(format, video, audios.length, subtitles.length, streams);
  const main = video ?? audio ?? subtitles[0] ?? streams[0];
  const isMoving = fileType === 'video' && video !== undefined;

  const formatBitRate = toNumber(format.bit_rate);
  const audioBitRate = toNumber(audio?.bit_rate) ?? (video === undefined && audio ? formatBitRate : null);
  const videoBitRate = video ? (toNumber(video.bit_rate) ?? estimateVideoBitRate(formatBitRate, audios)) : null;

  return {
    file_type: fileType,
    file_format: containerName(format.format_name, fileName),
    codec: main?.codec_name ?? null,
    mime_type: mimeTypeForMedia(fileName, fileType),
    duration: toNumber(format.duration),
    width: video?.width ?? null,
    height: video?.height ?? null,
    frame_rate: isMoving ? frameRate(video) : null,
    is_varying_frame_rate: isMoving ? isVaryingFrameRate(video) : null,
    timebase: video?.time_base ?? audio?.time_base ?? null,
    pixel_format: video?.pix_fmt ?? null,
    bitrate_video_kb: videoBitRate === null ? null : videoBitRate / 1000,
    bitrate_audio_kb: audioBitRate === null ? null : audioBitRate / 1000,
    video_profile_level: video ? profileLevel(video) : null,
  };
}

// Still-image demuxers: image2 (by file name) and the image pipes (png_pipe, jpeg_pipe, webp_pipe, ...).
function isImageFormat(format: ProbeFormat, video: ProbeStream): boolean {
  const name = format.format_name ?? '';
  if (name === 'image2' || name.endsWith('_pipe')) return true;
  // GIF and APNG are images when they hold a single frame, animations (video) otherwise.
  return (name === 'gif' || name === 'apng') && video.nb_frames === '1';
}

function fileTypeOf(
  format: ProbeFormat,
  video: ProbeStream | undefined,
  audioCount: number,
  subtitleCount: number,
  streams: ProbeStream[],
): string {
  if (video) return isImageFormat(format, video) ? 'image' : 'video';
  if (audioCount > 0) return 'audio';
  if (subtitleCount > 0) return 'subtitles';
  if (streams.length > 0 && streams.every((s) => s.codec_type === 'data')) return 'data';
  return 'other';
}

// ffprobe names a demuxer by every format it reads ("mov,mp4,m4a,3gp,3g2,mj2"); the file's
// extension says which one this file is.
const FORMAT_FAMILIES: Record<string, { byExtension: Record<string, string>; otherwise: string }> = {
  'mov,mp4,m4a,3gp,3g2,mj2': {
    byExtension: { mp4: 'mp4', m4v: 'mp4', mov: 'mov', m4a: 'm4a', '3gp': '3gp', '3g2': '3g2', mj2: 'mj2' },
    otherwise: 'mp4',
  },
  'matroska,webm': { byExtension: { webm: 'webm', weba: 'webm' }, otherwise: 'matroska' },
};

function containerName(formatName: string | undefined, fileName: string): string | null {
  if (!formatName) return null;
  const family = FORMAT_FAMILIES[formatName];
  if (family) return family.byExtension[fileExtension(fileName)] ?? family.otherwise;
  return formatName.split(',')[0];
}

/** "30000/1001" -> 29.97; null for "0/0", "N/A" or nonsense. */
function parseRate(rate: string | undefined): number | null {
  const match = /^(\d+)\/(\d+)$/.exec(rate ?? '');
  if (!match) return null;
  const value = Number(match[1]) / Number(match[2]);
  return Number.isFinite(value) && value > 0 ? value : null;
}

function frameRate(video: ProbeStream): number | null {
  const rate = parseRate(video.avg_frame_rate) ?? parseRate(video.r_frame_rate);
  return rate === null ? null : Math.round(rate * 1000) / 1000;
}

// r_frame_rate is the lowest rate that represents every timestamp, avg_frame_rate the average:
// they differ when frames are not evenly spaced. Unknown when either is missing.
function isVaryingFrameRate(video: ProbeStream): boolean | null {
  const real = parseRate(video.r_frame_rate);
  const average = parseRate(video.avg_frame_rate);
  if (real === null || average === null) return null;
  return Math.abs(real - average) > 1e-9 * real;
}

function toNumber(value: string | undefined): number | null {
  if (value === undefined || value === '' || value === 'N/A') return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}

// Matroska/WebM store no per-stream bit rate. The video's is then estimated as the container's
// overall rate minus the audio rates that are known, so it includes any audio whose rate is unknown
// (e.g. Opus in WebM) and the container overhead: an upper bound, not a measurement.
function estimateVideoBitRate(formatBitRate: number | null, audios: ProbeStream[]): number | null {
  if (formatBitRate === null) return null;
  const knownAudio = audios.reduce((sum, a) => sum + (toNumber(a.bit_rate) ?? 0), 0);
  const estimate = formatBitRate - knownAudio;
  return estimate > 0 ? estimate : null;
}

// H.264 stores level x 10 (40 = 4.0), HEVC level x 30 (120 = 4.0), AV1 an index (major 2 + idx/4).
function levelName(codec: string | undefined, level: number): string {
  if (codec === 'h264') return (level / 10).toFixed(1);
  if (codec === 'hevc') return (level / 30).toFixed(1);
  if (codec === 'av1') return `${2 + (level >> 2)}.${level & 3}`;
  return String(level);
}

/** "High@4.0"; the profile alone when the level is unknown; null when the profile is unknown. */
function profileLevel(video: ProbeStream): string | null {
  const profile = video.profile;
  if (!profile || profile === 'unknown') return null;
  const level = video.level;
  if (level === undefined || level <= 0) return profile;
  return `${profile}@${levelName(video.codec_name, level)}`;
}
