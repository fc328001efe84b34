import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRoot } from '../core/confine/set-up.ts';
import { DEFAULT_UID_BASE, DEFAULT_UID_COUNT } from '../core/confine/uid-pool.ts';
import { POD_FALLBACK } from '../core/jobs/runner-contract.ts';
import { confinementFromEnv } from './confinement-from-env.ts';

const cache = join(tmpdir(), 'ffop-confine-tests');

test('the runner confines with bubblewrap, as the uid it was lent (as root)', async () => {
  const { confinement, uid } = await confinementFromEnv({ sandboxUid: 2000123 }, cache);
  assert.equal(confinement.kind, 'bwrap');
  assert.equal(uid, isRoot() ? 2000123 : undefined);
});

test('as root without a lent uid it takes one of the sandbox range, never root', async (t) => {
  if (!isRoot()) return t.skip('needs root');
  const { uid } = await confinementFromEnv({}, cache);
  assert.ok(uid! >= DEFAULT_UID_BASE && uid! < DEFAULT_UID_BASE + DEFAULT_UID_COUNT, String(uid));
  await assert.rejects(confinementFromEnv({ sandboxUid: 0 }, cache), /unprivileged uid/);
});

test('without bubblewrap the runner refuses; the pod fallback is never taken by a root runner', async () => {
  const missing = { bwrapPath: '/nonexistent/bwrap' };
  await assert.rejects(confinementFromEnv(missing, cache), /ffmpeg cannot be confined on this host/);
  if (isRoot()) {
    await assert.rejects(confinementFromEnv({ ...missing, confinement: POD_FALLBACK }, cache), /cannot be confined/);
  } else {
    const { confinement } = await confinementFromEnv({ ...missing, confinement: POD_FALLBACK }, cache);
    assert.equal(confinement.kind, 'pod');
  }
  const unsafe = await confinementFromEnv({ ...missing, unsafeNoConfinement: true }, cache);
  assert.equal(unsafe.confinement.kind, 'unconfined');
});
