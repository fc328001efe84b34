// With S3 storage, public files are still served at the service's own /storage/public/... URLs (a
// bucket need not allow anonymous reads): the bytes stream from S3 through here, ranges included.
// Private files are served by S3 itself through presigned URLs.
import { Readable } from 'node:stream';
import { Hono, type Context } from 'hono';
import { isPublicKey } from '../../core/storage/keys.ts';
import { StorageNotFound, type Storage } from '../../core/storage/storage.ts';
import { inlineDisposition, keyFromPath, parseRange } from './storage-files.ts';

export function publicFilesProxy(storage: Storage): Hono {
  const app = new Hono();
  const serve = async (c: Context, head: boolean) => {
    const key = keyFromPath(new URL(c.req.url).pathname);
    if (!key) return c.json({ detail: 'invalid storage path' }, 400);
    if (!isPublicKey(key)) return c.json({ detail: 'this file is private: ask the API for a presigned URL' }, 403);
    const info = await storage.stat(key);
    if (!info) return c.json({ detail: 'file not found' }, 404);
    const range = parseRange(c.req.header('range'), info.size);
    if (range === 'unsatisfiable') return c.body(null, 416, { 'content-range': `bytes */${info.size}` });
    const headers: Record<string, string> = {
      'content-type': info.contentType,
      'accept-ranges': 'bytes',
      'cache-control': 'public, max-age=300',
      'x-content-type-options': 'nosniff',
      'content-security-policy': 'sandbox',
      'content-disposition': inlineDisposition(key.slice(key.lastIndexOf('/') + 1)),
      'content-length': String(range ? range.end - range.start + 1 : info.size),
    };
    if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${info.size}`;
    const status = range ? 206 : 200;
    if (head) return c.body(null, status, headers);
    try {
      const body = Readable.toWeb(await storage.read(key, range)) as ReadableStream;
      return c.body(body, status, headers);
    } catch (err) {
      if (err instanceof StorageNotFound) return c.json({ detail: 'file not found' }, 404);
      throw err;
    }
  };
  app.get('/storage/*', (c) => serve(c, false));
  app.on('HEAD', '/storage/*', (c) => serve(c, true));
  return app;
}
