// A stored file's life (store-file downloads, direct uploads, command outputs) and where it came from.
export const FileStatus = {
  QUEUED: 'QUEUED',
  DOWNLOADING: 'DOWNLOADING',
  DOWNLOADED: 'DOWNLOADED',
  UPLOADED: 'UPLOADED',
  FAILED: 'FAILED',
  STORED: 'STORED',
} as const;
export type FileStatus = (typeof FileStatus)[keyof typeof FileStatus];

export const StoreType = { INPUT: 'INPUT', OUTPUT: 'OUTPUT', STORED_FILE: 'STORED_FILE' } as const;
export type StoreType = (typeof StoreType)[keyof typeof StoreType];
