import type { MediaInfo } from './media-info.ts';
import { contentTypeForFileName } from './mime.ts';
import type { ProgramStart } from '../confine/program-start.ts';
import { probeMedia, type ProbeOptions } from './probe.ts';

/** Metadata of a file that is not media ffprobe can read (a text file, a zip): type by name only. */
export function unknownMedia(fileName: string): MediaInfo {
  return {
    file_type: 'other',
    file_format: null,
    codec: null,
    mime_type: contentTypeForFileName(fileName),
    duration: null,
    width: null,
    height: null,
    frame_rate: null,
    is_varying_frame_rate: null,
    timebase: null,
    pixel_format: null,
    bitrate_video_kb: null,
    bitrate_audio_kb: null,
    video_profile_level: null,
  };
}

/** Probes a local file; files ffprobe cannot read are still stored, described by their name. `start`: see probeMedia. */
export async function probeOrDescribe(path: string, fileName: string, opts: ProbeOptions, start?: ProgramStart): Promise<MediaInfo> {
  return probeMedia(path, opts, start).catch(() => unknownMedia(fileName));
}
