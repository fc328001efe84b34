// Request bodies of the command endpoints, with every rule of the spec's tables.
import * as v from 'valibot';
import { FINITE, ge, gt, jsonBool, laxInt, laxNumber, le, maxChars, msg, RESERVED_KEYS, str } from './validation.ts';
import { bodyObject, stated, text, TEXT_PATTERN } from './body.ts';
import { httpUrl } from './http-url.ts';

export const DEFAULT_RUN_SECONDS = 300;
export const DEFAULT_VCPUS = 8;
export const MAX_CHAIN_COMMANDS = 10;
export const MAX_FILES_PER_SIDE = 20;

const INPUT_ALIAS = /^in_[A-Za-z0-9_]+$/;
const OUTPUT_ALIAS = /^out_[A-Za-z0-9_]+$/;
// A file name only: no folders, no leading dot or dash, no '..'.
const FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$/;

const inputAlias = v.pipe(
  str(),
  v.regex(
    INPUT_ALIAS,
    msg('string_pattern_mismatch', "Input file keys must start with 'in_' and contain only letters, digits and underscores"),
  ),
);
const outputAlias = v.pipe(
  str(),
  v.regex(
    OUTPUT_ALIAS,
    msg('string_pattern_mismatch', "Output file keys must start with 'out_' and contain only letters, digits and underscores"),
  ),
);

const inputUrl = v.pipe(httpUrl(), maxChars(4096));

const outputFileName = v.pipe(
  str(),
  v.regex(
    FILE_NAME,
    msg('value_error', 'Value error, output file names must be a file name only (letters, digits, _ - .; no folders), e.g. "output.mp4"'),
  ),
  v.check((s) => !s.includes('..'), msg('value_error', "Value error, output file names must not contain '..'")),
  stated<string>({ not: { pattern: '\\.\\.' } }), // the check above
);

type Entries<T> = Record<string, T>;
const countAtMost = <T>(n: number, what: string) =>
  v.maxEntries<Entries<T>, number, string>(n, msg('value_error', `Value error, at most ${n} ${what}`));
const notEmpty = <T>(what: string) =>
  v.minEntries<Entries<T>, number, string>(1, msg('value_error', `Value error, ${what} must name at least one file`));

// An out_playlist_ output is an HLS or DASH manifest (its segments are stored with it).
export const PLAYLIST_ALIAS = /^out_playlist_/;
const MANIFEST_NAME = /\.([Mm]3[Uu]8|[Mm][Pp][Dd])$/;
const playlistsAreManifests = [
  v.rawCheck<Record<string, string>>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    for (const [key, value] of Object.entries(dataset.value)) {
      if (!PLAYLIST_ALIAS.test(key) || MANIFEST_NAME.test(value)) continue;
      const message = msg('value_error', 'Value error, an out_playlist_ output names an HLS (.m3u8) or DASH (.mpd) manifest');
      addIssue({ message, path: [{ type: 'object', origin: 'value', input: dataset.value, key, value }] });
    }
  }),
  stated<Entries<string>>({ allOf: [{ patternProperties: { [PLAYLIST_ALIAS.source]: { pattern: MANIFEST_NAME.source } } }] }),
] as const;

const dict = () => msg('dict_type', 'Input should be a valid dictionary');

export const inputFilesSchema = v.pipe(v.record(inputAlias, inputUrl, dict()), countAtMost<string>(MAX_FILES_PER_SIDE, 'input files'));
export const outputFilesMapSchema = v.pipe(
  v.record(outputAlias, outputFileName, dict()),
  notEmpty<string>('output_files'),
  countAtMost<string>(MAX_FILES_PER_SIDE, 'output files'),
  ...playlistsAreManifests,
);

// Reserved keys are refused in any object of a body (api/schemas/validation.ts); metadata keys are free text.
const metadataKey = v.pipe(text(), maxChars(512), v.notValues(RESERVED_KEYS, msg('value_error', 'Value error, this key is not allowed')));
const metadataValue = v.union(
  [
    v.pipe(v.string(), maxChars(512), v.metadata({ pattern: TEXT_PATTERN })),
    v.pipe(v.number(), v.finite(), v.metadata(FINITE)),
    v.boolean(),
  ],
  msg('value_error', 'Value error, metadata values must be a string, an integer, a number or a boolean'),
);
export const metadataSchema = v.nullish(
  v.pipe(v.record(metadataKey, metadataValue, dict()), countAtMost<string | number | boolean>(10, 'metadata key/value pairs')),
);

const common = {
  input_files: v.nullish(inputFilesSchema),
  max_command_run_seconds: v.optional(v.pipe(laxNumber(), gt(0)), DEFAULT_RUN_SECONDS),
  // Without a value, the default (8) is lowered to the plan's maximum; see api/routes/commands.ts.
  vcpu_count: v.optional(v.pipe(laxInt(), gt(0))),
  metadata: metadataSchema,
  is_private: v.optional(jsonBool(), false),
};

// JSON Schema cannot state the command-line rules (docs/api.md: "What is refused at submit, and what
// is left to ffmpeg"): the description points there, and a 422 at this field is about them.
const COMMAND_LINE =
  'ffmpeg arguments without the leading `ffmpeg`; {{alias}} placeholders stand for the declared files. ' +
  'Refused with a 422 at this field (nothing is stored): what the request gets wrong or what the service never allows, ' +
  'whatever ffmpeg would do: undeclared aliases, paths outside the working folder (system fonts under /usr/share/fonts ' +
  "and /usr/local/share/fonts excepted), protocols, pipes and devices, options that switch off ffmpeg's protections or " +
  'read and write files of their own, filters that load code or open files, sockets or devices, tee slaves that write ' +
  'anything but an output placeholder, and options, formats or filters that ffmpeg knows but the service does not allow; ' +
  'a declared output the commands never write is refused at output_files. ' +
  'Left to ffmpeg: names ffmpeg does not know (filters, options, formats) and filtergraph syntax (quotes that do not ' +
  'pair inside a graph included) are accepted, and the command ends FAILED at once with error_status FFMPEG_FAILED and ' +
  'the message ffmpeg gives (cause first), without a download or an ffmpeg run; codecs, option values and expressions ' +
  'are judged by ffmpeg when it runs (FFMPEG_FAILED, its message first).';
const commandLine = v.pipe(
  text(),
  v.minLength(1, msg('string_too_short', 'String should have at least 1 character')),
  maxChars(20_000),
  v.metadata({ description: COMMAND_LINE }),
);

// Either inputs from URLs or one zip of them, not both: checked here, with its statement for the document.
type InputsOrFolder = { input_files?: Entries<string> | null; input_compressed_folder?: string | null };
const eitherInputsOrFolder = <T extends InputsOrFolder>() =>
  [
    v.rawCheck<T>(({ dataset, addIssue }) => {
      if (!dataset.typed || !dataset.value.input_compressed_folder || Object.keys(dataset.value.input_files ?? {}).length === 0) return;
      const key = 'input_compressed_folder';
      addIssue({
        message: msg('value_error', 'Value error, give either input_files or input_compressed_folder, not both'),
        path: [{ type: 'object', origin: 'value', input: dataset.value, key, value: dataset.value[key] }],
      });
    }),
    stated<T>({
      not: {
        required: ['input_files', 'input_compressed_folder'],
        properties: { input_files: { type: 'object', minProperties: 1 }, input_compressed_folder: { type: 'string' } },
      },
    }),
  ] as const;

const runCommandFields = bodyObject(
  {
    ffmpeg_command: commandLine,
    output_files: v.union(
      [v.literal('OUTPUT_FOLDER'), outputFilesMapSchema],
      msg('value_error', "Value error, output_files must be an object of output files or the string 'OUTPUT_FOLDER'"),
    ),
    input_compressed_folder: v.nullish(inputUrl),
    ...common,
  },
  [
    {
      ffmpeg_command: '-i {{in_1}} -vf scale=640:-2 -c:v libx264 -preset veryfast -c:a aac {{out_1}}',
      input_files: { in_1: 'https://example.com/media/video.mp4' },
      output_files: { out_1: 'video_640.mp4' },
      metadata: { job: 42 },
    },
  ],
);
export const runCommandSchema = v.pipe(runCommandFields, ...eitherInputsOrFolder<v.InferOutput<typeof runCommandFields>>());
export type RunCommandRequest = v.InferOutput<typeof runCommandSchema>;

const SINGLE_ONLY = 'input_compressed_folder is only available for single commands, not chains';
export const runChainSchema = bodyObject(
  {
    ffmpeg_commands: v.pipe(
      v.array(commandLine, msg('list_type', 'Input should be a valid list')),
      v.minLength(1, msg('too_short', 'List should have at least 1 item after validation, not 0')),
      v.maxLength(MAX_CHAIN_COMMANDS, msg('too_long', `List should have at most ${MAX_CHAIN_COMMANDS} items after validation`)),
    ),
    output_files: outputFilesMapSchema,
    input_compressed_folder: v.nullish(v.never(msg('value_error', `Value error, ${SINGLE_ONLY}`))),
    ...common,
  },
  [
    {
      ffmpeg_commands: ['-i {{in_1}} -t 10 -c copy {{out_cut}}', '-i {{out_cut}} -vf scale=320:-2 {{out_small}}'],
      input_files: { in_1: 'https://example.com/media/video.mp4' },
      output_files: { out_cut: 'cut.mp4', out_small: 'small.mp4' },
    },
  ],
);
export type RunChainRequest = v.InferOutput<typeof runChainSchema>;

export const listQuerySchema = v.object({
  limit: v.optional(v.pipe(laxInt(), ge(1), le(1000)), 100),
  offset: v.optional(v.pipe(laxInt(), ge(0), le(1_000_000_000)), 0),
});

export const presignQuerySchema = v.object({
  presigned_ttl_seconds: v.optional(v.pipe(laxNumber(), gt(0), le(604800))),
});

export const commandIdParam = v.pipe(str(), v.uuid(msg('uuid_parsing', 'Input should be a valid UUID')));
