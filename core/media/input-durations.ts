// The duration of each input, as ffmpeg itself prints it on stderr before it starts:
//   Input #0, mov,mp4,m4a,3gp,3g2,mj2, from '.in/in_1/clip.mp4':
//     Duration: 00:00:03.00, start: 0.000000, bitrate: 198 kb/s
// ("Duration: N/A" for endless sources such as lavfi's testsrc). Reading ends with the inputs: what
// follows ("Stream mapping:", "Output #0") is no longer about them.

const INPUT_HEADER = /^Input #(\d+), /;
const DURATION_LINE = /^ {2}Duration: (?:(\d+):(\d{2}):(\d{2}(?:\.\d+)?)|N\/A)/;
const INPUTS_END = /^(Stream mapping:|Output #\d+, )/;
/** Longer lines are not one of the lines read here. */
const MAX_LINE = 4096;

export class InputDurationReader {
  private readonly found: (number | null)[] = [];
  private current: number | null = null;
  private partialLine = '';
  private done = false;

  /** Feeds a chunk of ffmpeg's stderr. */
  push(chunk: Buffer | string): void {
    if (this.done) return;
    const lines = (this.partialLine + chunk.toString()).split('\n');
    const last = lines.pop() ?? '';
    this.partialLine = last.length > MAX_LINE ? '' : last;
    for (const line of lines) {
      this.line(line.replace(/\r$/, ''));
      if (this.done) return;
    }
  }

  /** Seconds of each input by its index; null where ffmpeg printed N/A or nothing (e.g. `-loglevel error`). */
  durations(): (number | null)[] {
    return Array.from(this.found, (d) => d ?? null);
  }

  private line(line: string): void {
    if (INPUTS_END.test(line)) {
      this.done = true;
      return;
    }
    const header = INPUT_HEADER.exec(line);
    if (header) {
      this.current = Number(header[1]);
      // Inputs are numbered from 0 by ffmpeg; a number far off is not one of its headers.
      if (this.current > 1000) this.current = null;
      else this.found[this.current] ??= null;
      return;
    }
    const duration = this.current === null ? null : DURATION_LINE.exec(line);
    if (!duration || this.current === null) return;
    this.found[this.current] =
      duration[1] === undefined ? null : Number(duration[1]) * 3600 + Number(duration[2]) * 60 + Number(duration[3]);
    this.current = null; // one Duration line per input
  }
}
