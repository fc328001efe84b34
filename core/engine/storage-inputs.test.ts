import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStorage } from '../storage/local-storage.ts';
import { accountMayRead, classifyStorageUrl, invalidStorageUrl, storageKeyOfUrl } from './storage-inputs.ts';

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

test('attack: storage URLs whose path decodes to no valid key are "invalid", never a key', async () => {
  const root = await mkdtemp(join(tmpdir(), 'ffop-si-'));
  try {
    const storage = new LocalStorage({ root, publicBaseUrl: 'http://127.0.0.1:8080', signingKey: 'k'.repeat(32) });
    const base = 'http://127.0.0.1:8080/storage/';
    for (const path of [
      'public/%2e%2e%2fprivate/acc-2/f/x.mp4',
      'public/..%2Fprivate/acc-2/f/x.mp4',
      'public/a%2F%2E%2E%2F..%2Fprivate/acc-2/f/x.mp4',
      'public/a/f/%00x.mp4',
      'public/a/f/x%5Cy.mp4',
      'public/a/f/%E0%A4%A.mp4',
      'public//x.mp4',
    ]) {
      const found = await classifyStorageUrl(storage, base + path);
      assert.equal(found.kind, 'invalid', path);
      assert.equal(await storageKeyOfUrl(storage, base + path), null, path);
      assert.match((await invalidStorageUrl(storage, base + path)) ?? '', /storage URL of this service/, path);
    }
    // The URL parser resolves plain dot segments itself: what is left is an ordinary key (or not ours).
    assert.deepEqual(await classifyStorageUrl(storage, `${base}public/%2e%2e/private/acc-2/f/x.mp4`), {
      kind: 'storage',
      key: 'private/acc-2/f/x.mp4',
    });
    assert.equal(accountMayRead('private/acc-2/f/x.mp4', 'acc-1'), false);
    assert.deepEqual(await classifyStorageUrl(storage, `${base}%2e%2e/%2e%2e/etc/passwd`), { kind: 'external' });
    assert.equal(await invalidStorageUrl(storage, storage.publicUrl('public/a/f/my clip.mp4')), null);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
