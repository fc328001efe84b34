// For tests: the real confinement of this host, set up once per test process (bubblewrap and the
// seccomp program are real; nothing here is a stand-in). As root, runs get uids from a pool of their
// own, well away from the service's default range.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Confinement } from '../confinement.ts';
import { isRoot, setUpConfinement } from '../set-up.ts';
import { UidPool } from '../uid-pool.ts';

export interface TestConfinement {
  confinement: Confinement;
  /** As root; undefined otherwise. */
  uids: UidPool | undefined;
}

let shared: Promise<TestConfinement> | undefined;

export function testConfinement(): Promise<TestConfinement> {
  shared ??= (async () => {
    const uids = isRoot() ? new UidPool(3_000_000, 1000) : undefined;
    const confinement = await setUpConfinement({ unsafe: false, cacheDir: join(tmpdir(), 'ffop-confine-tests'), uids });
    return { confinement, uids };
  })();
  return shared;
}
