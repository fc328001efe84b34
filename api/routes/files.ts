import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { describeRoute } from 'hono-openapi';
import { ErrorStatus } from '../../core/commands/error-status.ts';
import { FileStatus, StoreType } from '../../core/files/file-status.ts';
import type { Quotas } from '../../core/accounts/quotas.ts';
import { checkPrivateFiles } from '../../core/accounts/plan-rules.ts';
import type { FilesRepo, FileRow, NewFileRow } from '../../core/files/files-repo.ts';
import type { Caller } from '../../core/accounts/accounts-repo.ts';
import { choosePartSize, partCount } from '../../core/files/part-size.ts';
import { contentTypeForFileName } from '../../core/media/mime.ts';
import { fileNameFromUrl, safeLocalName } from '../../core/net/file-name.ts';
import { invalidStorageUrl } from '../../core/engine/storage-inputs.ts';
import { objectKey } from '../../core/storage/object-keys.ts';
import { MultipartError, type Storage } from '../../core/storage/storage.ts';
import type { AppEnv } from '../middleware/auth.ts';
import { storedFileRecord } from '../files/serialize.ts';
import { bulkDeleteSchema, completeUploadSchema, fileIdParam, initUploadSchema, storeFileSchema } from '../schemas/files.ts';
import { listQuerySchema, presignQuerySchema } from '../schemas/commands.ts';
import { invalid, jsonBody, parseWith, queryParams } from '../schemas/validation.ts';
import { commonResponses, responses, storedFileSchema, uploadSessionSchema } from '../openapi/components.ts';
import { jsonRequestBody, pathParameter, queryParameters } from '../openapi/requests.ts';
import { idempotencyKeyParameter, idempotencyResponses } from '../openapi/idempotency.ts';

export interface FileRoutesDeps {
  files: FilesRepo;
  storage: Storage;
  quotas: Quotas;
  /** Wakes the background file tasks (downloads, probing). */
  kickFileTasks: () => void;
  /** How long upload URLs stay valid and when abandoned uploads are cleaned up (seconds, <= 7 days). */
  uploadTtlSeconds: number;
}

const notFound = (c: Context) => c.json({ detail: 'File not found' }, 404);
const fileRecord = responses.json(storedFileSchema, 'The stored file');
const idParam = pathParameter('file_id', fileIdParam);

/** A stored file's first record: QUEUED until downloaded (store-file) or uploaded (init-upload). */
function newStoredFile(
  caller: Caller,
  id: string,
  fileName: string,
  isPrivate: boolean,
  extra: Partial<NewFileRow>,
): NewFileRow & { storageKey: string } {
  return {
    id,
    accountId: caller.account.id,
    environmentName: caller.environment,
    serviceStoreType: StoreType.STORED_FILE,
    status: FileStatus.QUEUED,
    storageKey: objectKey({ isPrivate, accountId: caller.account.id, fileId: id, fileName }),
    fileName,
    originalFileUrl: fileName,
    isPrivate,
    ...extra,
  };
}

export function fileRoutes(d: FileRoutesDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.post(
    '/v1/files/store-file',
    describeRoute({
      summary: 'Store a file from a URL',
      description: 'Answers at once; poll GET /v1/files/{file_id} until status is STORED (or FAILED).',
      tags: ['files'],
      parameters: [idempotencyKeyParameter],
      requestBody: jsonRequestBody(storeFileSchema),
      responses: {
        200: responses.json({ type: 'object', properties: { file_id: { type: 'string', format: 'uuid' } } }, 'Accepted'),
        403: responses.json(responses.detailString, 'Plan or quota'),
        ...idempotencyResponses,
        ...commonResponses,
      },
    }),
    async (c) => {
      const req = await jsonBody(c, storeFileSchema);
      const storageProblem = await invalidStorageUrl(d.storage, req.file_url);
      if (storageProblem) throw invalid(['body', 'file_url'], storageProblem);
      const caller = c.get('caller');
      checkPrivateFiles(caller.account.plan, req.is_private);
      await d.quotas.checkStorage(caller.account);
      const id = randomUUID();
      const urlName = fileNameFromUrl(req.file_url);
      if (urlName === null) {
        // As for command inputs: the file name must be at the end of the URL. Nothing is fetched.
        await d.files.insert(
          newStoredFile(caller, id, 'file', req.is_private, {
            originalFileUrl: req.file_url,
            status: FileStatus.FAILED,
            errorStatus: ErrorStatus.INVALID_INPUT_FILE_NAME,
            errorMessage: 'file_url does not end in a file name (e.g. .../video.mp4); the file name must appear at the end of the URL',
          }),
        );
        return c.json({ file_id: id });
      }
      await d.files.insert(newStoredFile(caller, id, safeLocalName(urlName), req.is_private, { originalFileUrl: req.file_url }));
      d.kickFileTasks();
      return c.json({ file_id: id });
    },
  );

  app.get(
    '/v1/files',
    describeRoute({
      summary: 'List stored files and command outputs, newest first',
      tags: ['files'],
      parameters: queryParameters(listQuerySchema),
      responses: { 200: responses.json({ type: 'array', items: storedFileSchema }, 'Files'), ...commonResponses },
    }),
    async (c) => {
      const { limit, offset } = queryParams(c, listQuerySchema);
      const rows = await d.files.listForAccount(c.get('caller').account.id, limit, offset);
      return c.json(await Promise.all(rows.map((f) => storedFileRecord(f, d.storage))));
    },
  );

  app.get(
    '/v1/files/:file_id',
    describeRoute({
      summary: 'Read one file',
      tags: ['files'],
      parameters: [idParam, ...queryParameters(presignQuerySchema)],
      responses: { 200: fileRecord, 404: responses.json(responses.detailString, 'No such file'), ...commonResponses },
    }),
    async (c) => {
      const id = parseWith(fileIdParam, c.req.param('file_id'), ['path', 'file_id']);
      const { presigned_ttl_seconds } = queryParams(c, presignQuerySchema);
      const f = await d.files.findForAccount(c.get('caller').account.id, id);
      if (!f) return notFound(c);
      return c.json(await storedFileRecord(f, d.storage, presigned_ttl_seconds));
    },
  );

  app.delete(
    '/v1/files/:file_id',
    describeRoute({
      summary: 'Delete one file',
      description: 'The bytes are removed; the record stays readable with is_deleted true. Answers the record.',
      tags: ['files'],
      parameters: [idParam],
      responses: { 200: fileRecord, 404: responses.json(responses.detailString, 'No such file'), ...commonResponses },
    }),
    async (c) => {
      const id = parseWith(fileIdParam, c.req.param('file_id'), ['path', 'file_id']);
      const accountId = c.get('caller').account.id;
      const f = await d.files.findForAccount(accountId, id);
      if (!f) return notFound(c);
      await deleteFiles(accountId, [id]);
      return c.json(await storedFileRecord((await d.files.findById(id))!, d.storage));
    },
  );

  app.post(
    '/v1/files/bulk-delete',
    describeRoute({
      summary: 'Delete up to 1000 files',
      description: 'deleted_file_ids lists the ids deleted by this call; unknown, foreign and already deleted ids are left out.',
      tags: ['files'],
      requestBody: jsonRequestBody(bulkDeleteSchema),
      responses: {
        200: responses.json(
          { type: 'object', properties: { deleted_file_ids: { type: 'array', items: { type: 'string', format: 'uuid' } } } },
          'Deleted',
        ),
        ...commonResponses,
      },
    }),
    async (c) => {
      const { file_ids } = await jsonBody(c, bulkDeleteSchema);
      const deleted = await deleteFiles(c.get('caller').account.id, [...new Set(file_ids.map((x) => x.toLowerCase()))]);
      return c.json({ deleted_file_ids: deleted });
    },
  );

  /** Marks files deleted (so a concurrent call cannot count them twice), then removes their bytes. */
  async function deleteFiles(accountId: string, ids: string[]): Promise<string[]> {
    const rows = await d.files.markDeleted(accountId, ids);
    for (const f of rows) await removeBytes(f);
    return rows.map((f) => f.id);
  }

  async function removeBytes(f: FileRow): Promise<void> {
    if (f.uploadId && f.status === FileStatus.QUEUED) await d.storage.abortMultipartUpload(f.storageKey, f.uploadId);
    // A file's folder holds the file and, for playlists, its segments.
    await d.storage.deletePrefix(f.storageKey.slice(0, f.storageKey.lastIndexOf('/') + 1));
  }

  app.post(
    '/v1/files/init-upload',
    describeRoute({
      summary: 'Start a direct multipart upload',
      description:
        'PUT part k (exactly part_size bytes, the last one the remainder) to upload_urls[k-1], keep each ETag header, ' +
        'then complete-upload. With local storage, a part PUT the service has no disk space for is answered ' +
        '507 Insufficient Storage, {"detail": "The service ran out of disk space ..."} with Retry-After; send the part again later.',
      tags: ['files'],
      parameters: [idempotencyKeyParameter],
      requestBody: jsonRequestBody(initUploadSchema),
      responses: {
        200: responses.json(uploadSessionSchema, 'Upload session'),
        403: responses.json(responses.detailString, 'Plan or storage quota'),
        ...idempotencyResponses,
        ...commonResponses,
      },
    }),
    async (c) => {
      const req = await jsonBody(c, initUploadSchema);
      const caller = c.get('caller');
      checkPrivateFiles(caller.account.plan, req.is_private);
      await d.quotas.checkStorage(caller.account, req.size_bytes);
      const id = randomUUID();
      const partSize = choosePartSize(req.size_bytes, req.part_size);
      const row = newStoredFile(caller, id, req.filename, req.is_private, { partSize, expectedSizeBytes: req.size_bytes });
      const key = row.storageKey;
      const uploadId = await d.storage.createMultipartUpload(key, contentTypeForFileName(req.filename), partSize);
      const urls: string[] = [];
      const parts = partCount(req.size_bytes, partSize);
      for (let part = 1; part <= parts; part++) {
        // Each URL takes exactly its part's bytes, so no upload holds more than size_bytes.
        const bytes = part < parts ? partSize : req.size_bytes - (parts - 1) * partSize;
        urls.push(await d.storage.presignUploadPart(key, uploadId, part, d.uploadTtlSeconds, bytes));
      }
      await d.files.insert({ ...row, uploadId });
      return c.json({ file_id: id, part_size: partSize, upload_urls: urls });
    },
  );

  const uploadInProgress = (f: FileRow) => f.uploadId !== null && f.status === FileStatus.QUEUED && !f.isDeleted;
  const notInProgress = (c: Context, f: FileRow) =>
    c.json({ detail: `upload of file ${f.id} is not in progress (status ${f.status}${f.isDeleted ? ', deleted' : ''})` }, 409);

  app.post(
    '/v1/files/:file_id/complete-upload',
    describeRoute({
      summary: 'Complete a direct upload',
      description: 'List every part 1..N in order with its ETag. Answers UPLOADED at once; poll until STORED.',
      tags: ['files'],
      parameters: [idParam],
      requestBody: jsonRequestBody(completeUploadSchema),
      responses: {
        200: fileRecord,
        404: responses.json(responses.detailString, 'No such file'),
        409: responses.json(responses.detailString, 'Upload not in progress'),
        ...commonResponses,
      },
    }),
    async (c) => {
      const id = parseWith(fileIdParam, c.req.param('file_id'), ['path', 'file_id']);
      const { parts } = await jsonBody(c, completeUploadSchema);
      const f = await d.files.findForAccount(c.get('caller').account.id, id);
      if (!f) return notFound(c);
      if (!uploadInProgress(f)) return notInProgress(c, f);
      const expectedParts = partCount(f.expectedSizeBytes ?? 0, f.partSize ?? 1);
      if (parts.length !== expectedParts) {
        throw invalid(
          ['body', 'parts'],
          `Value error, this upload has ${expectedParts} parts (part_size ${f.partSize}); ${parts.length} were listed`,
        );
      }
      const uploaded = await d.storage.listParts(f.storageKey, f.uploadId!);
      const total = uploaded.filter((p) => p.partNumber <= expectedParts).reduce((s, p) => s + p.size, 0);
      if (uploaded.length >= expectedParts && total !== f.expectedSizeBytes) {
        throw invalid(['body', 'parts'], `Value error, the parts hold ${total} bytes but size_bytes was ${f.expectedSizeBytes}`);
      }
      let size: number;
      try {
        ({ size } = await d.storage.completeMultipartUpload(
          f.storageKey,
          f.uploadId!,
          parts.map((p) => ({ partNumber: p.part_number, etag: p.etag })),
        ));
      } catch (err) {
        if (err instanceof MultipartError) throw invalid(['body', 'parts'], `Value error, ${err.message}`);
        throw err;
      }
      if (!(await d.files.transition(id, FileStatus.QUEUED, { status: FileStatus.UPLOADED, sizeBytes: size }))) {
        await d.storage.delete(f.storageKey); // aborted or deleted meanwhile: keep no bytes
        return notInProgress(c, (await d.files.findById(id))!);
      }
      d.kickFileTasks();
      return c.json(await storedFileRecord((await d.files.findById(id))!, d.storage));
    },
  );

  app.post(
    '/v1/files/:file_id/abort-upload',
    describeRoute({
      summary: 'Abort a direct upload',
      tags: ['files'],
      parameters: [idParam],
      responses: {
        200: responses.json({ type: 'object' }, 'Aborted'),
        404: responses.json(responses.detailString, 'No such file'),
        409: responses.json(responses.detailString, 'Upload not in progress'),
        ...commonResponses,
      },
    }),
    async (c) => {
      const id = parseWith(fileIdParam, c.req.param('file_id'), ['path', 'file_id']);
      const f = await d.files.findForAccount(c.get('caller').account.id, id);
      if (!f) return notFound(c);
      if (!uploadInProgress(f)) return notInProgress(c, f);
      const moved = await d.files.transition(id, FileStatus.QUEUED, {
        status: FileStatus.FAILED,
        errorStatus: ErrorStatus.UPLOAD_ABORTED,
        errorMessage: 'the upload was aborted; its parts were discarded',
      });
      if (!moved) return notInProgress(c, (await d.files.findById(id))!);
      await d.storage.abortMultipartUpload(f.storageKey, f.uploadId!);
      return c.json({});
    },
  );

  return app;
}
