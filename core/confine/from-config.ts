// The service's (and the operator's) confinement, from its settings: checked at start, so a host
// where ffmpeg cannot be confined refuses to start instead of running hostile command lines.
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { FileProber } from '../media/file-prober.ts';
import type { Confinement } from './confinement.ts';
import { isRoot, setUpConfinement, UNSAFE_SETTING } from './set-up.ts';
import { UidPool } from './uid-pool.ts';

export interface ServiceConfinement {
  confinement: Confinement;
  /** As root: the uids confined runs take (runners and probes). */
  uids: UidPool | undefined;
  /** Confined ffprobe for stored and uploaded files. */
  prober: FileProber;
}

export async function confinementFromConfig(config: Config, logger: Logger): Promise<ServiceConfinement> {
  const uids = isRoot() ? new UidPool(config.sandboxUidBase, config.sandboxUidCount) : undefined;
  const confinement = await setUpConfinement({
    unsafe: config.unsafeNoConfinement,
    cacheDir: join(config.dataDir, 'confine'),
    seccompProgram: config.seccompProgram,
    uids,
    log: (line) => logger.warn(line),
  });
  if (confinement.kind === 'unconfined') {
    logger.warn(`${UNSAFE_SETTING}=1: ffmpeg and ffprobe run WITHOUT confinement; commands can read what this service can read`);
  }
  return { confinement, uids, prober: new FileProber({ confinement, uids, memoryBytes: config.maxMemoryBytes }) };
}
