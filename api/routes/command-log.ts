// GET /v1/commands/{id}/log: ffmpeg's stderr of each step, as text (docs/automation.md, "ffmpeg's log").
// The last 1 MiB of each step, while it runs and for FFOP_LOG_RETENTION_DAYS after the command ended.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import type { CommandWithOutputs } from '../../core/commands/commands-repo.ts';
import type { CommandLogsRepo, StepLog } from '../../core/commands/command-logs-repo.ts';
import type { AppEnv } from '../middleware/auth.ts';
import { commandIdParam, MAX_CHAIN_COMMANDS } from '../schemas/commands.ts';
import { ge, laxInt, le, parseWith, queryParams } from '../schemas/validation.ts';
import { commonResponses, responses } from '../openapi/components.ts';
import { pathParameter, queryParameters } from '../openapi/requests.ts';

export interface CommandLogRoutesDeps {
  readCommand: (accountId: string, id: string) => Promise<CommandWithOutputs | null>;
  logs: CommandLogsRepo;
  /** How long after its command ended a log is kept (FFOP_LOG_RETENTION_DAYS). */
  retentionMs: number;
  clock: () => Date;
}

// A chain has at most MAX_CHAIN_COMMANDS steps; a step a command does not have is a 404.
const logQuerySchema = v.object({ step: v.optional(v.pipe(laxInt(), ge(1), le(MAX_CHAIN_COMMANDS))) });

export function commandLogRoutes(d: CommandLogRoutesDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get(
    '/v1/commands/:command_id/log',
    describeRoute({
      summary: "ffmpeg's log of a command",
      description:
        "ffmpeg's own output (stderr) of each step, as plain text: a line `--- step N of M ---` before each step's text. " +
        'The last 1 MiB of each step is kept (a line says how much was cut). Readable while the step runs (within about 2 s) ' +
        'and for FFOP_LOG_RETENTION_DAYS (default 7) after the command ended; then 410. `step` (from 1) answers one step only.',
      tags: ['commands'],
      parameters: [pathParameter('command_id', commandIdParam), ...queryParameters(logQuerySchema)],
      responses: {
        200: { description: "ffmpeg's log", content: { 'text/plain': { schema: { type: 'string' } } } },
        404: responses.json(responses.detailString, 'No such command, or no such step of it'),
        410: responses.json(responses.detailString, 'The log was deleted: its command ended longer ago than the retention'),
        ...commonResponses,
      },
    }),
    async (c) => {
      const id = parseWith(commandIdParam, c.req.param('command_id'), ['path', 'command_id']);
      const { step } = queryParams(c, logQuerySchema);
      const found = await d.readCommand(c.get('caller').account.id, id);
      if (!found) return c.json({ detail: 'Command not found' }, 404);
      const steps = found.row.steps.length;
      if (step !== undefined && step > steps) {
        return c.json({ detail: `Command ${id} has no step ${step}: it has ${steps} step${steps > 1 ? 's' : ''}` }, 404);
      }
      const ended = found.row.finishedAt;
      if (ended && d.clock().getTime() - ended.getTime() > d.retentionMs) {
        const days = Math.round((d.retentionMs / 86_400_000) * 100) / 100;
        return c.json({ detail: `The log of command ${id} was deleted: it is kept ${days} days after the command ended` }, 410);
      }
      const logs = await d.logs.read(id, step === undefined ? undefined : step - 1);
      return c.body(logText(logs, steps, step), 200, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
    },
  );
  return app;
}

/** Each step asked for, with its header line; a step with no log yet shows only its header. */
export function logText(logs: StepLog[], steps: number, only?: number): string {
  const numbers = only === undefined ? Array.from({ length: steps }, (_, i) => i + 1) : [only];
  return numbers
    .map((n) => {
      const log = logs.find((l) => l.step === n - 1);
      const cut = log && log.cutChars > 0 ? `[... ${log.cutChars} earlier characters cut: the last 1 MiB is kept ...]\n` : '';
      const text = log ? log.text + (log.text.endsWith('\n') ? '' : '\n') : '';
      return `--- step ${n} of ${steps} ---\n${cut}${text}`;
    })
    .join('');
}
