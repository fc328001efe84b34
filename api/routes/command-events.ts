// GET /v1/commands/{command_id}/events: the command's live event stream (Server-Sent Events).
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type { CommandWithOutputs } from '../../core/commands/commands-repo.ts';
import type { AppEnv } from '../middleware/auth.ts';
import { commandIdParam } from '../schemas/commands.ts';
import { parseWith } from '../schemas/validation.ts';
import { commonResponses, responses } from '../openapi/components.ts';
import { pathParameter } from '../openapi/requests.ts';
import type { EventStreams } from '../events/event-streams.ts';

export interface CommandEventRoutesDeps {
  streams: EventStreams;
  readCommand: (accountId: string, id: string) => Promise<CommandWithOutputs | null>;
}

/** One event of the stream, as SSE readers (and schemathesis) see it. */
const eventSchema = {
  type: 'object',
  properties: {
    event: { type: 'string', enum: ['state', 'end'] as string[] },
    id: { type: 'string', description: 'Names the state the event shows; send it back as Last-Event-ID to resume.' },
    data: {
      type: 'string',
      contentMediaType: 'application/json',
      description:
        '`state`: {command_id, status, processing_stage, queue_reason, progress}. `end`: the record GET /v1/commands/{command_id} answers.',
    },
    retry: { type: 'integer' },
  },
  required: ['data'] as string[],
} as const;

/** Last-Event-ID is ours when it is one: anything else (too long, another server's) resumes nothing. */
const LAST_EVENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function commandEventRoutes(d: CommandEventRoutesDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get(
    '/v1/commands/:command_id/events',
    describeRoute({
      summary: "Follow a command's changes live (Server-Sent Events)",
      description:
        "Answers `text/event-stream`. On connect an event `state` with the command's status, processing_stage, queue_reason " +
        'and progress; another at each change of them; when the command has ended, an event `end` whose data is the whole ' +
        'record (as GET /v1/commands/{command_id} answers it), then the stream closes. A command that has ended answers its ' +
        '`end` at once. Every event has an id naming the state it shows: reconnecting with `Last-Event-ID` sends nothing until ' +
        'the command is in another state. A comment `: keep-alive` comes every 15 s; a stream closes after an hour (reconnect ' +
        'with Last-Event-ID). Opening a stream counts against the rate limit; at most FFOP_MAX_EVENT_STREAMS_PER_KEY streams ' +
        '(default 20) may be open per API key, else 429.',
      tags: ['commands'],
      parameters: [pathParameter('command_id', commandIdParam)],
      responses: {
        200: {
          description: 'The event stream',
          content: { 'text/event-stream': { schema: eventSchema } },
        },
        404: responses.json(responses.detailString, 'No such command'),
        ...commonResponses,
        429: responses.json(
          responses.detailString,
          'Rate limit exceeded, or too many event streams open for this API key or server; see the Retry-After header',
        ),
      },
    }),
    async (c) => {
      const id = parseWith(commandIdParam, c.req.param('command_id'), ['path', 'command_id']);
      const caller = c.get('caller');
      // HEAD runs this GET route, and its body would never be read nor cancelled: no stream for it.
      if (c.req.method === 'HEAD') {
        if (!(await d.readCommand(caller.account.id, id))) return c.json({ detail: 'Command not found' }, 404);
        return c.body(null, 200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' });
      }
      const slot = d.streams.take(caller.keyId);
      if ('detail' in slot) return c.json({ detail: slot.detail }, 429, { 'retry-after': String(slot.retryAfterSeconds) });
      const lastEventId = c.req.header('last-event-id')?.trim();
      const response = await d.streams.open(
        slot,
        caller.account.id,
        id,
        lastEventId !== undefined && LAST_EVENT_ID.test(lastEventId) ? lastEventId : null,
        () => d.readCommand(caller.account.id, id),
      );
      return response ?? c.json({ detail: 'Command not found' }, 404);
    },
  );
  return app;
}
