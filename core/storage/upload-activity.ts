// Which parts of local multipart uploads are being written, and which uploads are being completed.
// The local folder belongs to one process (embedded mode; cluster mode stores in S3), so this is known
// in memory: completion never publishes a file a part is still being written into, and one part is
// never written by two requests at once (their bytes would interleave in the same range).
import { MultipartConflict } from './storage.ts';

interface Activity {
  writing: Set<number>;
  completing: boolean;
}

export class UploadActivity {
  readonly #uploads = new Map<string, Activity>();

  /** Marks part `partNumber` of `upload` as being written; call the returned function when done. */
  beginPart(upload: string, partNumber: number): () => void {
    const activity = this.#activityOf(upload);
    if (activity.completing) throw new MultipartConflict('the upload is being completed');
    if (activity.writing.has(partNumber)) throw new MultipartConflict(`part ${partNumber} is being uploaded by another request`);
    activity.writing.add(partNumber);
    return () => {
      activity.writing.delete(partNumber);
      this.#forgetIfIdle(upload, activity);
    };
  }

  /** Marks `upload` as being completed (no part may be in flight); call the returned function when done. */
  beginCompletion(upload: string): () => void {
    const activity = this.#activityOf(upload);
    if (activity.completing) throw new MultipartConflict('the upload is being completed by another request');
    const [busy] = activity.writing;
    if (busy !== undefined) {
      this.#forgetIfIdle(upload, activity);
      throw new MultipartConflict(`part ${busy} is still being uploaded`);
    }
    activity.completing = true;
    return () => {
      activity.completing = false;
      this.#forgetIfIdle(upload, activity);
    };
  }

  /** Uploads with a part in flight or a completion running (for tests: nothing is left behind). */
  get size(): number {
    return this.#uploads.size;
  }

  #activityOf(upload: string): Activity {
    let activity = this.#uploads.get(upload);
    if (activity === undefined) {
      activity = { writing: new Set(), completing: false };
      this.#uploads.set(upload, activity);
    }
    return activity;
  }

  #forgetIfIdle(upload: string, activity: Activity): void {
    if (activity.writing.size === 0 && !activity.completing && this.#uploads.get(upload) === activity) this.#uploads.delete(upload);
  }
}
