import * as v from 'valibot';
import { ge, gt, laxBool, laxInt, le, msg, str } from '../validation.ts';

export const MAX_UPLOAD_BYTES = 5_497_558_138_880; // 5 TB, the spec's size_bytes limit
const uuid = () => v.pipe(str(), v.uuid(msg('uuid_parsing', 'Input should be a valid UUID')));

export const storeFileSchema = v.object({
  file_url: v.pipe(
    str(),
    v.check((s) => {
      try {
        const u = new URL(s);
        return u.protocol === 'http:' || u.protocol === 'https:';
      } catch {
        return false;
      }
    }, msg('url_parsing', 'Input should be a valid URL with an http or https scheme')),
  ),
  is_private: v.optional(laxBool(), false),
});

export const bulkDeleteSchema = v.object({
  file_ids: v.pipe(
    v.array(uuid(), msg('list_type', 'Input should be a valid list')),
    v.minLength(1, msg('too_short', 'List should have at least 1 item after validation, not 0')),
    v.maxLength(1000, msg('too_long', 'List should have at most 1000 items after validation')),
  ),
});

export const initUploadSchema = v.object({
  filename: v.pipe(
    str(),
    v.minLength(1, msg('string_too_short', 'String should have at least 1 character')),
    v.maxLength(255, msg('string_too_long', 'String should have at most 255 characters')),
    v.regex(/^[A-Za-z0-9_.-]+$/, msg('string_pattern_mismatch', "String should match pattern '^[A-Za-z0-9_.-]+$'")),
    v.check((s) => s !== '.' && s !== '..', msg('value_error', "Value error, filename must not be '.' or '..'")),
  ),
  size_bytes: v.pipe(laxInt(), ge(0), le(MAX_UPLOAD_BYTES)),
  is_private: v.optional(laxBool(), false),
  part_size: v.optional(v.pipe(laxInt(), gt(0))),
});

export const completeUploadSchema = v.object({
  parts: v.pipe(
    v.array(
      v.object({
        part_number: v.pipe(laxInt(), ge(1), le(10000)),
        etag: v.pipe(str(), v.minLength(1, msg('string_too_short', 'String should have at least 1 character'))),
      }),
      msg('list_type', 'Input should be a valid list'),
    ),
    v.minLength(1, msg('too_short', 'List should have at least 1 item after validation, not 0')),
    v.maxLength(10000, msg('too_long', 'List should have at most 10000 items after validation')),
  ),
});

export const fileIdParam = uuid();
