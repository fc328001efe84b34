// The body a webhook delivery sends, Rendi's shape: {"data": <record>, "timestamp": <unix ms>}, where
// the record is exactly what GET /v1/commands/{id} or GET /v1/files/{id} answers (read from the
// committed rows when the first attempt is made).
import type { CommandsRepo } from '../../core/commands/commands-repo.ts';
import type { FilesRepo } from '../../core/files/files-repo.ts';
import type { Storage } from '../../core/storage/storage.ts';
import type { DeliveryRow } from '../../core/webhooks/webhooks-repo.ts';
import { WebhookEvent } from '../../core/webhooks/webhook-status.ts';
import { commandRecord } from '../commands/serialize.ts';
import { storedFileRecord } from '../files/serialize.ts';

export const TEST_MESSAGE = 'test delivery from ffmpeg-operator';

export interface PayloadSources {
  commands: CommandsRepo;
  files: FilesRepo;
  storage: Storage;
}

/** The JSON body of a delivery; null when what it announces no longer exists. */
export async function buildPayload(d: DeliveryRow, s: PayloadSources, now: Date): Promise<string | null> {
  const data = await dataOf(d, s, now);
  return data === null ? null : JSON.stringify({ data, timestamp: now.getTime() });
}

async function dataOf(d: DeliveryRow, s: PayloadSources, now: Date): Promise<unknown> {
  switch (d.eventType) {
    case WebhookEvent.TEST:
      return { message: TEST_MESSAGE, environment_name: d.environmentName };
    case WebhookEvent.COMMAND_FINISHED: {
      const found = d.subjectId ? await s.commands.findWithOutputs(d.subjectId) : null;
      if (!found || found.row.accountId !== d.accountId) return null;
      return commandRecord(found.row, found.files, s.storage, now);
    }
    case WebhookEvent.FILE_FINISHED: {
      const file = d.subjectId ? await s.files.findById(d.subjectId) : null;
      if (!file || file.accountId !== d.accountId) return null;
      return storedFileRecord(file, s.storage);
    }
    default:
      return null;
  }
}
