// As root, a confined run's folder (and what is already in it) is given to the run's own uid, so the
// run can write there and nowhere else. The service, as root, can still read and remove it.
import { lchown, readdir } from 'node:fs/promises';
import { join } from 'node:path';

export async function handOver(folder: string, uid: number): Promise<void> {
  // lchown: a link is never followed out of the folder.
  for (const entry of await readdir(folder, { recursive: true })) await lchown(join(folder, entry), uid, uid);
  await lchown(folder, uid, uid);
}
