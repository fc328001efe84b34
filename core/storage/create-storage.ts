// Chooses the storage backend from the configuration: the local folder (default) or S3.
import { LocalStorage } from './local-storage.ts';
import type { Storage } from './storage.ts';

export interface StorageConfig {
  kind: 'local' | 's3';
  /** The service's own base URL: public files are served under `${publicUrl}/storage/` with either backend. */
  publicUrl: string;
  signingKey: string;
  localDir: string;
  s3?: { endpoint: string; region: string; bucket: string; accessKey: string; secretKey: string };
}

export async function createStorage(c: StorageConfig): Promise<Storage> {
  if (c.kind === 's3') {
    if (!c.s3) throw new Error('S3 storage needs FFOP_S3_ENDPOINT, FFOP_S3_BUCKET, FFOP_S3_ACCESS_KEY and FFOP_S3_SECRET_KEY');
    // Loaded only for S3: the minio client and its dependencies hold about 38 MB of memory.
    const { S3Storage } = await import('./s3-storage.ts');
    return new S3Storage({ ...c.s3, publicBaseUrl: `${c.publicUrl}/storage` });
  }
  return new LocalStorage({ root: c.localDir, publicBaseUrl: c.publicUrl, signingKey: c.signingKey });
}
