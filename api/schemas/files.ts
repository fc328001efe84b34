import * as v from 'valibot';
import { ge, gt, jsonBool, laxInt, le, msg, str } from './validation.ts';
import { bodyObject, text } from './body.ts';
import { httpUrl } from './http-url.ts';

export const MAX_UPLOAD_BYTES = 5_497_558_138_880; // 5 TB, the spec's size_bytes limit
const uuid = () => v.pipe(str(), v.uuid(msg('uuid_parsing', 'Input should be a valid UUID')));

export const storeFileSchema = bodyObject(
  {
    file_url: httpUrl(),
    is_private: v.optional(jsonBool(), false),
  },
  [{ file_url: 'https://example.com/media/video.mp4' }],
);

export const bulkDeleteSchema = bodyObject(
  {
    file_ids: v.pipe(
      v.array(uuid(), msg('list_type', 'Input should be a valid list')),
      v.minLength(1, msg('too_short', 'List should have at least 1 item after validation, not 0')),
      v.maxLength(1000, msg('too_long', 'List should have at most 1000 items after validation')),
    ),
  },
  [{ file_ids: ['6f0c2c1e-8a63-4d5e-9b1a-3f2d4c5b6a70'] }],
);

export const initUploadSchema = bodyObject(
  {
    filename: v.pipe(
      str(),
      v.minLength(1, msg('string_too_short', 'String should have at least 1 character')),
      v.maxLength(255, msg('string_too_long', 'String should have at most 255 characters')),
      v.regex(/^[A-Za-z0-9_.-]+$/, msg('string_pattern_mismatch', "String should match pattern '^[A-Za-z0-9_.-]+$'")),
      v.notValues(['.', '..'], msg('value_error', "Value error, filename must not be '.' or '..'")),
    ),
    size_bytes: v.pipe(laxInt(), ge(0), le(MAX_UPLOAD_BYTES)),
    is_private: v.optional(jsonBool(), false),
    part_size: v.optional(v.pipe(laxInt(), gt(0))),
  },
  [{ filename: 'video.mp4', size_bytes: 31457280 }],
);

export const completeUploadSchema = bodyObject(
  {
    parts: v.pipe(
      v.array(
        bodyObject({
          part_number: v.pipe(laxInt(), ge(1), le(10000)),
          etag: v.pipe(text(), v.minLength(1, msg('string_too_short', 'String should have at least 1 character'))),
        }),
        msg('list_type', 'Input should be a valid list'),
      ),
      v.minLength(1, msg('too_short', 'List should have at least 1 item after validation, not 0')),
      v.maxLength(10000, msg('too_long', 'List should have at most 10000 items after validation')),
    ),
  },
  [{ parts: [{ part_number: 1, etag: '"9b2cf535f27731c974343645a3985328"' }] }],
);

export const fileIdParam = uuid();
