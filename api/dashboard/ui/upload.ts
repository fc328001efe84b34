// A direct upload, as the API describes it: init-upload, a PUT of each part to its presigned URL
// (keeping the ETag each answers), then complete-upload. XMLHttpRequest because it reports the bytes sent.
import type { Api } from './api.ts';
import { uploadName } from './file-name.ts';
import type { StoredFile } from './types.ts';

/** Sends one part; resolves with its ETag. `onSent` gets the bytes of this part sent so far. */
function putPart(url: string, body: Blob, onSent: (bytes: number) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    xhr.upload.onprogress = (e) => onSent(e.loaded);
    xhr.onload = () => {
      const etag = xhr.getResponseHeader('ETag');
      if (xhr.status < 200 || xhr.status >= 300)
        reject(new Error(`the storage refused a part (HTTP ${xhr.status}): ${xhr.responseText.slice(0, 200)}`));
      // With S3 storage on another origin, the bucket's CORS rules must expose ETag.
      else if (!etag) reject(new Error('the storage answered a part without an ETag header the page may read'));
      else resolve(etag);
    };
    xhr.onerror = () => reject(new Error('a part could not be sent (network error, or the storage does not allow this origin)'));
    xhr.send(body);
  });
}

export async function uploadFile(api: Api, file: File, isPrivate: boolean, onProgress: (fraction: number) => void): Promise<StoredFile> {
  const session = await api.initUpload({ filename: uploadName(file.name), size_bytes: file.size, is_private: isPrivate });
  try {
    const parts: { part_number: number; etag: string }[] = [];
    let sent = 0;
    for (const [i, url] of session.upload_urls.entries()) {
      const start = i * session.part_size;
      const chunk = file.slice(start, Math.min(file.size, start + session.part_size));
      const etag = await putPart(url, chunk, (bytes) => onProgress(file.size === 0 ? 1 : (sent + bytes) / file.size));
      sent += chunk.size;
      parts.push({ part_number: i + 1, etag });
    }
    onProgress(1);
    return await api.completeUpload(session.file_id, parts);
  } catch (err) {
    // Frees the parts sent so far; the upload's own error is the one worth showing.
    await api.abortUpload(session.file_id).catch(() => {});
    throw err;
  }
}
