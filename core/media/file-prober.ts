// Probes files for their media metadata, each probe confined to the file's own folder (which must
// hold nothing else) and, as root, run as a uid of its own.
import { dirname } from 'node:path';
import type { Confinement } from '../confine/confinement.ts';
import { handOver } from '../confine/hand-over.ts';
import type { UidPool } from '../confine/uid-pool.ts';
import type { MediaInfo } from './media-info.ts';
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

  constructor(o: FileProberOptions) {
    this.options = o;
  }

  /** Media metadata of `path`; a file ffprobe cannot read is described by its name. */
  async describe(path: string, fileName: string): Promise<MediaInfo> {
    const borrowed = this.options.uid === undefined ? this.options.uids?.acquire() : undefined;
    try {
      if (borrowed !== undefined) await handOver(dirname(path), borrowed);
      return await probeOrDescribe(path, fileName, {
        confinement: this.options.confinement,
        uid: this.options.uid ?? borrowed,
        memoryBytes: this.options.memoryBytes,
        ffprobePath: this.options.ffprobePath,
      });
    } finally {
      if (borrowed !== undefined) this.options.uids?.release(borrowed);
    }
  }
}
