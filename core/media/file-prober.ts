// Probes files for their media metadata, each probe confined to the file's own folder (which must
// hold nothing else) and, as root, run as a uid of its own.
import { dirname } from 'node:path';
import type { Confinement } from '../confine/confinement.ts';
import { handOver } from '../confine/hand-over.ts';
import type { ProgramStart } from '../confine/program-start.ts';
import type { UidPool } from '../confine/uid-pool.ts';
import type { MediaInfo } from './media-info.ts';
import { ffprobeStart, type ProbeOptions } from './probe.ts';
import { probeOrDescribe } from './unknown-media.ts';

export interface FileProberOptions {
  confinement: Confinement;
  /** As root: each probe borrows a uid from here and gets the folder handed over. */
  uids?: UidPool;
  /** As root, in a runner: the step's own uid, which already owns the folder. */
  uid?: number;
  memoryBytes?: number;
  ffprobePath?: string;
}

export class FileProber {
  private readonly options: FileProberOptions;
  /** Probes started ahead, by path, until describe() lets them go. */
  private readonly ahead = new Map<string, ProgramStart>();

  constructor(o: FileProberOptions) {
    this.options = o;
  }

  /**
   * Starts the probe of `path` now, held before main() (program-start.ts), for describe() to let go
   * once the file is written: a runner does this while ffmpeg runs. Only where the confinement can hold
   * a start, and not where each probe borrows a uid (that one is only known when it runs). Its folder
   * must exist.
   */
  startAhead(path: string): void {
    const borrows = this.options.uid === undefined && this.options.uids !== undefined;
    if (!this.options.confinement.holdsStarts || borrows) return;
    if (!this.ahead.has(path)) this.ahead.set(path, ffprobeStart(path, this.probeOptions(this.options.uid)));
  }

  /** Stops the probes started ahead that describe() did not use. */
  cancelAhead(): void {
    for (const start of this.ahead.values()) start.cancel();
    this.ahead.clear();
  }

  /** Media metadata of `path`; a file ffprobe cannot read is described by its name. */
  async describe(path: string, fileName: string): Promise<MediaInfo> {
    const started = this.ahead.get(path);
    if (started) {
      this.ahead.delete(path);
      return probeOrDescribe(path, fileName, this.probeOptions(this.options.uid), started);
    }
    const borrowed = this.options.uid === undefined ? this.options.uids?.acquire() : undefined;
    try {
      if (borrowed !== undefined) await handOver(dirname(path), borrowed);
      return await probeOrDescribe(path, fileName, this.probeOptions(this.options.uid ?? borrowed));
    } finally {
      if (borrowed !== undefined) this.options.uids?.release(borrowed);
    }
  }

  private probeOptions(uid: number | undefined): ProbeOptions {
    return { confinement: this.options.confinement, uid, memoryBytes: this.options.memoryBytes, ffprobePath: this.options.ffprobePath };
  }
}
