// A stored command's FfmpegCommand: created, then the row stamped (resource_created_at). The API does
// this on submit and the operator's resync for rows the API never got to; the stamp is how the
// operator tells a resource still to create from one a user deleted (a 404 after the stamp cancels).
import type { CustomObjectsApi } from '@kubernetes/client-node';
import type { CommandsRepo } from '../commands/commands-repo.ts';
import { createFfmpegCommand } from './ffmpeg-command.ts';

/**
 * Creates the resource of the command `commandId` and stamps its row. Null when the row is gone (nothing
 * to create); else the new resource's uid, null when it existed already (the row is stamped all the same).
 * `onCreated` hears the new uid at once, before the stamp (the operator's watch may report it meanwhile).
 */
export async function createCommandResource(
  api: CustomObjectsApi,
  namespace: string,
  commands: Pick<CommandsRepo, 'findById' | 'update'>,
  commandId: string,
  onCreated?: (uid: string) => void,
): Promise<{ uid: string | null } | null> {
  const row = await commands.findById(commandId);
  if (!row) return null;
  const uid = await createFfmpegCommand(api, namespace, row);
  if (uid) onCreated?.(uid);
  await commands.update(commandId, { resourceCreatedAt: new Date() });
  return { uid };
}
