// Media metadata of one file, as the spec's output file entry and stored file record name it.
// Filled from ffprobe by core/media/probe.ts; null where the file has no such property.
export interface MediaInfo {
  file_type: string; // video | audio | image | subtitles | data | other
  file_format: string | null; // container, e.g. "mp4", "matroska", "mp3"
  codec: string | null; // codec of the main stream
  mime_type: string | null;
  duration: number | null; // seconds
  width: number | null;
  height: number | null;
  frame_rate: number | null; // frames per second
  is_varying_frame_rate: boolean | null;
  timebase: string | null; // fraction form, e.g. "1/12800"
  pixel_format: string | null;
  bitrate_video_kb: number | null;
  bitrate_audio_kb: number | null;
  video_profile_level: string | null;
}
