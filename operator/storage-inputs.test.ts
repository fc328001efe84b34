import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStorage } from '../core/storage/local-storage.ts';
import { accountMayRead, storageKeyOfUrl } from './storage-inputs.ts';

test('storage URLs are recognised, with or without a signature; other URLs are not', async () => {
  const root = await mkdtemp(join(tmpdir(), 'ffop-si-'));
  try {
    const storage = new LocalStorage({ root, publicBaseUrl: 'http://127.0.0.1:8080', signingKey: 'k'.repeat(32) });
    const key = 'private/acc-1/file-1/my clip.mp4';
    assert.equal(await storageKeyOfUrl(storage, storage.publicUrl(key)), key);
    assert.equal(await storageKeyOfUrl(storage, await storage.presignGet(key, 60)), key);
    assert.equal(await storageKeyOfUrl(storage, 'http://127.0.0.1:8080/other/x.mp4'), null);
    assert.equal(await storageKeyOfUrl(storage, 'http://127.0.0.1:8081/storage/public/a/b/x.mp4'), null);
    assert.equal(await storageKeyOfUrl(storage, 'https://example.com/storage/public/a/b/x.mp4'), null);
    assert.equal(await storageKeyOfUrl(storage, 'not a url'), null);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('an account reads its own files and public files only', () => {
  assert.equal(accountMayRead('public/other/f/x.mp4', 'me'), true);
  assert.equal(accountMayRead('private/me/f/x.mp4', 'me'), true);
  assert.equal(accountMayRead('private/other/f/x.mp4', 'me'), false);
});
