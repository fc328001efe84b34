// Request bodies of the command endpoints, with every rule of the spec's tables.
import * as v from 'valibot';
import { ge, gt, laxBool, laxInt, laxNumber, le, maxChars, msg, str } from '../validation.ts';

export const DEFAULT_RUN_SECONDS = 300;
export const DEFAULT_VCPUS = 8;
export const MAX_CHAIN_COMMANDS = 10;
export const MAX_FILES_PER_SIDE = 20;

const INPUT_ALIAS = /^in_[A-Za-z0-9_]+$/;
const OUTPUT_ALIAS = /^out_[A-Za-z0-9_]+$/;
// A file name only: no folders, no leading dot or dash, no '..'.
const FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$/;

const inputAlias = v.pipe(str(), v.regex(INPUT_ALIAS, msg('string_pattern_mismatch', "Input file keys must start with 'in_' and contain only letters, digits and underscores")));
const outputAlias = v.pipe(str(), v.regex(OUTPUT_ALIAS, msg('string_pattern_mismatch', "Output file keys must start with 'out_' and contain only letters, digits and underscores")));

const httpUrl = v.pipe(
  str(),
  v.check((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
    } catch {
      return false;
    }
  }, msg('url_parsing', 'Input should be a valid URL with an http or https scheme')),
  maxChars(4096),
);

const outputFileName = v.pipe(
  str(),
  v.regex(FILE_NAME, msg('value_error', 'Value error, output file names must be a file name only (letters, digits, _ - .; no folders), e.g. "output.mp4"')),
  v.check((s) => !s.includes('..'), msg('value_error', "Value error, output file names must not contain '..'")),
);

const countAtMost = <T extends Record<string, unknown>>(n: number, what: string) =>
  v.check<T, string>((o) => Object.keys(o).length <= n, msg('value_error', `Value error, at most ${n} ${what}`));
const notEmpty = <T extends Record<string, unknown>>(what: string) =>
  v.check<T, string>((o) => Object.keys(o).length > 0, msg('value_error', `Value error, ${what} must name at least one file`));

const dict = () => msg('dict_type', 'Input should be a valid dictionary');

export const inputFilesSchema = v.pipe(v.record(inputAlias, httpUrl, dict()), countAtMost<Record<string, string>>(MAX_FILES_PER_SIDE, 'input files'));
export const outputFilesMapSchema = v.pipe(
  v.record(outputAlias, outputFileName, dict()),
  notEmpty<Record<string, string>>('output_files'),
  countAtMost<Record<string, string>>(MAX_FILES_PER_SIDE, 'output files'),
);

const metadataValue = v.union(
  [v.pipe(v.string(), maxChars(512)), v.pipe(v.number(), v.finite()), v.boolean()],
  msg('value_error', 'Value error, metadata values must be a string, an integer, a number or a boolean'),
);
export const metadataSchema = v.nullish(
  v.pipe(
    v.record(v.pipe(str(), maxChars(512)), metadataValue, dict()),
    countAtMost<Record<string, string | number | boolean>>(10, 'metadata key/value pairs'),
  ),
);

const common = {
  input_files: v.nullish(inputFilesSchema),
  max_command_run_seconds: v.optional(v.pipe(laxNumber(), gt(0)), DEFAULT_RUN_SECONDS),
  // Without a value, the default (8) is lowered to the plan's maximum; see api/routes/commands.ts.
  vcpu_count: v.optional(v.pipe(laxInt(), gt(0))),
  metadata: metadataSchema,
  is_private: v.optional(laxBool(), false),
};

export const runCommandSchema = v.object({
  ffmpeg_command: v.pipe(str(), v.minLength(1, msg('string_too_short', 'String should have at least 1 character')), maxChars(20_000)),
  output_files: v.union(
    [v.literal('OUTPUT_FOLDER'), outputFilesMapSchema],
    msg('value_error', "Value error, output_files must be an object of output files or the string 'OUTPUT_FOLDER'"),
  ),
  input_compressed_folder: v.nullish(httpUrl),
  ...common,
});
export type RunCommandRequest = v.InferOutput<typeof runCommandSchema>;

export const runChainSchema = v.object({
  ffmpeg_commands: v.pipe(
    v.array(v.pipe(str(), v.minLength(1, msg('string_too_short', 'String should have at least 1 character')), maxChars(20_000)), msg('list_type', 'Input should be a valid list')),
    v.minLength(1, msg('too_short', 'List should have at least 1 item after validation, not 0')),
    v.maxLength(MAX_CHAIN_COMMANDS, msg('too_long', `List should have at most ${MAX_CHAIN_COMMANDS} items after validation`)),
  ),
  output_files: outputFilesMapSchema,
  input_compressed_folder: v.nullish(v.unknown()),
  ...common,
});
export type RunChainRequest = v.InferOutput<typeof runChainSchema>;

export const listQuerySchema = v.object({
  limit: v.optional(v.pipe(laxInt(), ge(1), le(1000)), 100),
  offset: v.optional(v.pipe(laxInt(), ge(0), le(1_000_000_000)), 0),
});

export const presignQuerySchema = v.object({
  presigned_ttl_seconds: v.optional(v.pipe(laxNumber(), gt(0), le(604800))),
});

export const commandIdParam = v.pipe(str(), v.uuid(msg('uuid_parsing', 'Input should be a valid UUID')));
