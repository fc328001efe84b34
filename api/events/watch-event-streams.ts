// The event streams of one process, assembled: the hub that the poll cache's change notifications
// feed (build-http-app.ts passes them on), the streams' registry, and the watch of API keys that closes
// a revoked key's streams.
import { and, inArray, isNull } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Config } from '../../core/config.ts';
import { KEYS_CHANGED_CHANNEL } from '../../core/accounts/key-cache.ts';
import { CommandEventHub, type CommandRead } from '../../core/commands/command-event-hub.ts';
import type { Database, Db } from '../../core/db/database.ts';
import { apiKeys } from '../../core/db/schema.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { commandRecord } from '../commands/serialize.ts';
import { EventStreams, type EventStreamsOptions } from './event-streams.ts';

/** FFOP_MAX_EVENT_STREAMS_PER_KEY and FFOP_MAX_EVENT_STREAMS, and (tests) shorter heartbeats and lifetimes. */
export type EventStreamLimits = Pick<EventStreamsOptions, 'maxPerKey' | 'maxTotal' | 'heartbeatMs' | 'lifetimeMs'>;

/** The limits the settings give. */
export function eventStreamLimits(
  config: Pick<Config, 'maxEventStreamsPerKey' | 'maxEventStreams' | 'eventStreamLifetimeSeconds'>,
): EventStreamLimits {
  return {
    maxPerKey: config.maxEventStreamsPerKey,
    maxTotal: config.maxEventStreams,
    lifetimeMs: config.eventStreamLifetimeSeconds * 1000,
  };
}

export interface WatchedEventStreams {
  hub: CommandEventHub;
  streams: EventStreams;
  /** Closes every stream and stops the key watch. */
  stop(): Promise<void>;
}

export async function watchEventStreams(o: {
  database: Database;
  read: CommandRead;
  storage: Storage;
  logger: Logger;
  limits?: EventStreamLimits;
}): Promise<WatchedEventStreams> {
  const hub = new CommandEventHub({
    read: o.read,
    onReadError: (err, commandId) =>
      o.logger.warn({ err, command_id: commandId }, 'event stream: could not read the command; trying again'),
  });
  const streams = new EventStreams({
    hub,
    record: (value) => commandRecord(value.row, value.files, o.storage, new Date()),
    onError: (err) => o.logger.error({ err }, 'event stream failed'),
    ...o.limits,
  });
  const checkKeys = () => {
    void streams
      .keysChanged((ids) => validKeyIds(o.database.db, ids))
      .catch((err: unknown) => {
        o.logger.warn({ err }, 'event streams: could not check API keys');
      });
  };
  const stopKeyWatch = await o.database.listen(KEYS_CHANGED_CHANNEL, checkKeys, checkKeys);
  return {
    hub,
    streams,
    stop: async () => {
      streams.closeAll();
      await stopKeyWatch();
    },
  };
}

/** The keys among `ids` that still authenticate (not revoked, not deleted). One query per key change. */
async function validKeyIds(db: Db, ids: string[]): Promise<Set<string>> {
  const rows = await db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(inArray(apiKeys.id, ids), isNull(apiKeys.revokedAt)));
  return new Set(rows.map((r) => r.id));
}
