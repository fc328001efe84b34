// The error_message of an FFMPEG_FAILED command: the lines of ffmpeg's stderr that state the cause
// first (e.g. "Stream map '0:s' matches no streams."), then the tail of what it printed. ffmpeg prints
// its stream report (Input #0, Duration, Stream #0:0 ...) before any error, so a plain tail often
// starts with that report instead of the reason.

const MAX_CHARS = 1500;

// Report and progress lines: what ffmpeg prints on a run that works too.
const REPORT_LINE =
  /^(Input #|Output #|Stream mapping:|Press \[q\]|frame=|size=|video:|\[(?:libx264|libx265|aac|h264|hevc) @ [^\]]+\] (?:using cpu|profile|264 -|frame |mb |kb\/s|ref |Qavg|consecutive|coded y|i16|i8|Weighted|8x8|direct|final ratefactor))/;

/** Lines that are neither indented report details nor report or progress lines. */
function causeLines(lines: string[]): string[] {
  return lines.filter((line) => line.trim() !== '' && !/^\s/.test(line) && !REPORT_LINE.test(line));
}

export function ffmpegErrorText(stderrTail: string): string {
  const lines = stderrTail
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line !== '');
  const causes = causeLines(lines).slice(-6);
  const tail = lines.slice(-8);
  const rest = tail.filter((line) => !causes.includes(line));
  const text =
    rest.length > 0 && causes.length > 0 ? `${causes.join('\n')}\n--\n${rest.join('\n')}` : (causes.length > 0 ? causes : tail).join('\n');
  return text.length > MAX_CHARS ? text.slice(0, MAX_CHARS - 3) + '...' : text;
}
