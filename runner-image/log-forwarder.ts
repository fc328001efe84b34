// ffmpeg's stderr, sent to the service as `log` events (GET /v1/commands/{id}/log): whole lines at most
// every 2 s, in pieces the event schema accepts, with the step's folder written as "." (ffmpeg runs in
// it; its absolute path says nothing the user needs and names the service's own layout). What waits is
// bounded: past 64 KiB in one interval the oldest waiting text goes, and a line in its place says how
// much (a debug log can print megabytes a second; the Job's event budget takes two pieces a second).
import { StringDecoder } from 'node:string_decoder';
import type { RunnerEvent } from '../core/jobs/step-spec.ts';
import { MAX_LOG_EVENT_CHARS } from '../core/jobs/runner-event-schema.ts';

export interface LogForwarderOptions {
  emit: (event: RunnerEvent) => void;
  /** Absolute paths written as replacement: [path, replacement], longest first. */
  paths: [string, string][];
  intervalMs?: number;
  maxWaitingChars?: number;
}

export class LogForwarder {
  private readonly decoder = new StringDecoder('utf8');
  private waiting = '';
  private timer: NodeJS.Timeout | null = null;
  private readonly o: Required<LogForwarderOptions>;

  constructor(o: LogForwarderOptions) {
    this.o = { intervalMs: 2_000, maxWaitingChars: 4 * MAX_LOG_EVENT_CHARS, ...o };
  }

  /** Characters dropped since the last send, said in the log where they were. */
  private dropped = 0;

  push(chunk: Buffer): void {
    this.waiting += this.decoder.write(chunk);
    if (this.waiting.length > this.o.maxWaitingChars) {
      // Drop whole lines where possible, so that what is kept starts at a line.
      const over = this.waiting.length - this.o.maxWaitingChars;
      const lineEnd = this.waiting.indexOf('\n', over);
      const cut = lineEnd >= 0 && lineEnd < this.waiting.length - 1 ? lineEnd + 1 : over;
      this.dropped += cut;
      this.waiting = this.waiting.slice(cut);
    }
    this.timer ??= setTimeout(() => {
      this.timer = null;
      this.send(false);
    }, this.o.intervalMs);
  }

  /** Sends everything that waits (ffmpeg has exited). */
  end(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.waiting += this.decoder.end();
    this.send(true);
  }

  private send(all: boolean): void {
    // Whole lines only until the end, so that a path is never split between two pieces.
    const cut = all ? this.waiting.length : Math.max(this.waiting.lastIndexOf('\n'), this.waiting.lastIndexOf('\r')) + 1;
    if (cut <= 0) return;
    const marker =
      this.dropped > 0 ? `[... ${this.dropped} characters of ffmpeg's output dropped: it wrote faster than the log keeps ...]\n` : '';
    this.dropped = 0;
    const text = marker + scrub(this.waiting.slice(0, cut), this.o.paths);
    this.waiting = this.waiting.slice(cut);
    for (let i = 0; i < text.length; i += MAX_LOG_EVENT_CHARS) {
      this.o.emit({ type: 'log', text: text.slice(i, i + MAX_LOG_EVENT_CHARS) });
    }
  }
}

/** The text with each path replaced, and no NUL (the database's text cannot hold it). */
export function scrub(text: string, paths: [string, string][]): string {
  let out = text.replaceAll('\0', '');
  for (const [path, replacement] of paths) if (path) out = out.replaceAll(path, replacement);
  return out;
}
