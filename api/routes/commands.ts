import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import {
  listRowOf,
  type CommandRow,
  type CommandsRepo,
  type CommandWithOutputs,
  type NewCommandQuotas,
  type NewCommandRow,
} from '../../core/commands/commands-repo.ts';
import type { Quotas } from '../../core/accounts/quotas.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { hasEnded } from '../../core/commands/command-status.ts';
import { NOT_QUEUED, type QueueView } from '../../core/commands/queue-snapshot.ts';
import { endsAtSubmit } from '../../core/commands/ended-at-submit.ts';
import type { AppEnv } from '../middleware/auth.ts';
import { chainRow, refuseInvalidStorageUrls, singleCommandRow } from '../commands/submission.ts';
import { retryRefusal, retryRow } from '../commands/retry.ts';
import { isUniqueViolation } from '../../core/db/unique-violation.ts';
import { commandListItem, commandRecord } from '../commands/serialize.ts';
import { commandIdParam, listQuerySchema, presignQuerySchema, runChainSchema, runCommandSchema } from '../schemas/commands.ts';
import { jsonBody, parseWith, queryParams } from '../schemas/validation.ts';
import { commandListItemSchema, commandRecordSchema, commonResponses, responses, submissionSchema } from '../openapi/components.ts';
import { jsonRequestBody, pathParameter, queryParameters } from '../openapi/requests.ts';
import { idempotencyKeyParameter, idempotencyResponses } from '../openapi/idempotency.ts';

/** JSON of ended commands' records, by the cached read it was made from. */
const finishedRecordJson = new WeakMap<CommandWithOutputs, string>();
/** JSON of ended commands' list items, the same way. */
const finishedListItemJson = new WeakMap<CommandWithOutputs, string>();

export interface CommandRoutesDeps {
  commands: CommandsRepo;
  readCommand: (accountId: string, id: string) => Promise<CommandWithOutputs | null>;
  /** A page of the account's commands, newest first, with their outputs (a watched poll cache's `list`). */
  listCommands: (accountId: string, limit: number, offset: number) => Promise<CommandWithOutputs[]>;
  /** Stores a new command within its account's quotas (through the poll cache, which keeps it for the first polls). */
  insertCommand: (row: NewCommandRow, quotas: NewCommandQuotas) => Promise<void>;
  quotas: Quotas;
  storage: Storage;
  /** Hands new work to the reconciler (embedded) or creates the FfmpegCommand (cluster). */
  dispatch: (commandId: string) => void;
  /**
   * A cancel was recorded: embedded mode asks its reconciler for a pass. (The operator, in cluster
   * mode, hears of it from the database: CommandsRepo.requestCancel notifies.)
   */
  cancelRequested?: (commandId: string) => void;
  /** Where a QUEUED command stands (a QueueSnapshot's view); absent: no positions (Kueue decides the order). */
  queueView?: (command: CommandRow) => Promise<QueueView>;
  clock: () => Date;
}

const submitted = {
  200: responses.json(submissionSchema, 'Accepted: poll GET /v1/commands/{command_id}'),
  403: responses.json(
    responses.detailString,
    'Your plan does not allow this command (vCPUs, run time, private files) or a quota (processing, storage) is used up',
  ),
  ...idempotencyResponses,
  ...commonResponses,
};

export function commandRoutes(d: CommandRoutesDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.post(
    '/v1/run-ffmpeg-command',
    describeRoute({
      summary: 'Run one FFmpeg command',
      description:
        'Answers `{command_id}` at once; poll GET /v1/commands/{command_id}. A 422 refuses what the request gets wrong or ' +
        'what the service never allows (see ffmpeg_command). A command ffmpeg would stop on with a message known already ' +
        '(an unknown filter, option or format, a filtergraph ffmpeg cannot read) is accepted and is FAILED from its first ' +
        "poll, with error_status FFMPEG_FAILED and ffmpeg's message; nothing is downloaded and ffmpeg does not run.",
      tags: ['commands'],
      parameters: [idempotencyKeyParameter],
      requestBody: jsonRequestBody(runCommandSchema),
      responses: submitted,
    }),
    async (c) => {
      const req = await jsonBody(c, runCommandSchema);
      await refuseInvalidStorageUrls(d.storage, req.input_files, req.input_compressed_folder);
      return submit(c, () => singleCommandRow(c.get('caller'), req));
    },
  );

  app.post(
    '/v1/run-chained-ffmpeg-commands',
    describeRoute({
      summary: 'Run up to 10 FFmpeg commands in order',
      description:
        'A later command may read an earlier output with `-i {{out_x}}`. Each command runs as its own step; a failed step fails the chain. ' +
        'A chain with a command that ffmpeg would stop on with a message known already is FAILED from its first poll (no command runs).',
      tags: ['commands'],
      parameters: [idempotencyKeyParameter],
      requestBody: jsonRequestBody(runChainSchema),
      responses: submitted,
    }),
    async (c) => {
      const req = await jsonBody(c, runChainSchema);
      await refuseInvalidStorageUrls(d.storage, req.input_files);
      return submit(c, () => chainRow(c.get('caller'), req));
    },
  );

  async function submit(c: import('hono').Context<AppEnv>, build: () => ReturnType<typeof singleCommandRow>) {
    const row = build();
    await d.quotas.storeNewCommand(c.get('caller').account, (quotas) => d.insertCommand(row, quotas));
    // One that ffmpeg would stop on has ended already (FAILED): there is nothing to run.
    if (!endsAtSubmit(row)) d.dispatch(row.id);
    return c.json({ command_id: row.id }, 200);
  }

  app.get(
    '/v1/commands/:command_id',
    describeRoute({
      summary: 'Read one command',
      tags: ['commands'],
      parameters: [pathParameter('command_id', commandIdParam), ...queryParameters(presignQuerySchema)],
      responses: {
        200: responses.json(commandRecordSchema, 'The command'),
        404: responses.json(responses.detailString, 'No such command'),
        ...commonResponses,
      },
    }),
    async (c) => {
      const id = parseWith(commandIdParam, c.req.param('command_id'), ['path', 'command_id']);
      const { presigned_ttl_seconds } = queryParams(c, presignQuerySchema);
      const found = await d.readCommand(c.get('caller').account.id, id);
      if (!found) return c.json({ detail: 'Command not found' }, 404);
      if (presigned_ttl_seconds !== undefined || !hasEnded(found.row.status) || found.row.finishedAt === null) {
        const queue = (await d.queueView?.(found.row)) ?? NOT_QUEUED;
        return c.json(await commandRecord(found.row, found.files, d.storage, d.clock(), presigned_ttl_seconds, queue));
      }
      // An ended command's record no longer changes (no clock in it, URLs without expiry): its JSON
      // lives as long as the poll cache keeps this read, and later polls only send it.
      let json = finishedRecordJson.get(found);
      if (json === undefined) {
        json = JSON.stringify(await commandRecord(found.row, found.files, d.storage, d.clock()));
        finishedRecordJson.set(found, json);
      }
      return c.body(json, 200, { 'Content-Type': 'application/json' });
    },
  );

  app.post(
    '/v1/commands/:command_id/cancel',
    describeRoute({
      summary: 'Cancel a command',
      description:
        'Stops a QUEUED or PROCESSING command (its ffmpeg run, runner or Job); it then ends FAILED with error_status CANCELLED, ' +
        'within seconds. Outputs of chain steps that had finished stay stored. The answer is the command as it is when the ' +
        'request is recorded (still QUEUED or PROCESSING); asking again is fine.',
      tags: ['commands'],
      parameters: [pathParameter('command_id', commandIdParam)],
      responses: {
        202: responses.json(commandRecordSchema, 'Cancel recorded; poll the command until FAILED'),
        404: responses.json(responses.detailString, 'No such command'),
        409: responses.json(responses.detailString, 'The command has already ended (SUCCESS or FAILED)'),
        ...commonResponses,
      },
    }),
    async (c) => {
      const id = parseWith(commandIdParam, c.req.param('command_id'), ['path', 'command_id']);
      // Read before the request is recorded: once it is, the reconciler (woken by its notification as
      // well as below) may end the command before a read after it, and the answer would not show the
      // command as it was when the cancel was recorded.
      const found = await d.commands.findWithOutputs(id);
      const outcome = await d.commands.requestCancel(id, c.get('caller').account.id, d.clock());
      if (!outcome || !found) return c.json({ detail: 'Command not found' }, 404);
      if (!outcome.requested) return c.json({ detail: `command ${id} has already ended (${outcome.endedWith})` }, 409);
      d.cancelRequested?.(id);
      const queue = (await d.queueView?.(found.row)) ?? NOT_QUEUED;
      return c.json(await commandRecord(found.row, found.files, d.storage, d.clock(), undefined, queue), 202);
    },
  );

  app.post(
    '/v1/commands/:command_id/retry',
    describeRoute({
      summary: 'Run a FAILED command again',
      description:
        "Submits a FAILED command's request again as a new command (a new command_id), checked and admitted like a new " +
        "submission under today's plan and quotas. The new command's record names the one it retries (retry_of), and the " +
        'FAILED one names its retry (retried_by). A command is retried once: retry the retry if it fails too.',
      tags: ['commands'],
      parameters: [pathParameter('command_id', commandIdParam), idempotencyKeyParameter],
      responses: {
        ...submitted,
        404: responses.json(responses.detailString, 'No such command'),
        409: responses.json(
          responses.detailString,
          'The command is not FAILED, or was retried already (the detail names the retry); or a request with the same Idempotency-Key is still running',
        ),
      },
    }),
    async (c) => {
      const id = parseWith(commandIdParam, c.req.param('command_id'), ['path', 'command_id']);
      const caller = c.get('caller');
      const failed = await d.commands.findById(id);
      if (!failed || failed.accountId !== caller.account.id) return c.json({ detail: 'Command not found' }, 404);
      const refusal = retryRefusal(failed);
      if (refusal) return c.json({ detail: refusal }, 409);
      const row = retryRow(caller, failed);
      await refuseInvalidStorageUrls(d.storage, row.inputs, row.inputArchiveUrl);
      try {
        return await submit(c, () => row);
      } catch (err) {
        // Another retry of the same command was stored first (the unique index on retry_of).
        if (!isUniqueViolation(err)) throw err;
        const now = await d.commands.findById(id);
        return c.json({ detail: retryRefusal({ ...failed, retriedBy: now?.retriedBy ?? 'another request' }) }, 409);
      }
    },
  );

  app.get(
    '/v1/commands',
    describeRoute({
      summary: 'List commands, newest first',
      tags: ['commands'],
      parameters: queryParameters(listQuerySchema),
      responses: { 200: responses.json({ type: 'array', items: commandListItemSchema }, 'Commands'), ...commonResponses },
    }),
    async (c) => {
      const { limit, offset } = queryParams(c, listQuerySchema);
      const page = await d.listCommands(c.get('caller').account.id, limit, offset);
      const now = d.clock();
      // As for one command's record: an ended command's list item no longer changes, and its JSON is
      // kept with the poll cache's read of it, so a client watching a batch mostly costs the id query.
      const items = page.map((found) => {
        let json = finishedListItemJson.get(found);
        if (json === undefined) {
          json = JSON.stringify(commandListItem(listRowOf(found), now));
          if (hasEnded(found.row.status) && found.row.finishedAt !== null) finishedListItemJson.set(found, json);
        }
        return json;
      });
      return c.body(`[${items.join(',')}]`, 200, { 'Content-Type': 'application/json' });
    },
  );

  return app;
}
