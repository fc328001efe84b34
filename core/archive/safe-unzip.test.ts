import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArchiveRefused, safeUnzip, type UnzipLimits } from './safe-unzip.ts';
import { zipFiles } from './zip-files.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ffop-zip-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const limits: UnzipLimits = { maxEntries: 100, maxTotalBytes: 100 * 1024 * 1024, maxRatio: 100, reservedTopLevel: ['.in', '.out'] };

/** Builds a zip with Python's zipfile, which writes whatever names and attributes it is told to. */
function pyZip(path: string, entries: { name: string; data?: string; zeros?: number; symlink?: boolean }[]): void {
  const script = `
import sys, json, zipfile
entries = json.loads(sys.argv[2])
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:
    for e in entries:
        info = zipfile.ZipInfo(e['name'])
        info.compress_type = zipfile.ZIP_DEFLATED
        if e.get('symlink'):
            info.external_attr = (0o120777 << 16)
        data = b'\\0' * e['zeros'] if e.get('zeros') else e.get('data', '').encode()
        z.writestr(info, data)
`;
  execFileSync('python3', ['-c', script, path, JSON.stringify(entries)]);
}

async function fresh(name: string): Promise<string> {
  const d = join(dir, name);
  await mkdir(d);
  return d;
}

test('extracts files and folders; zipFiles round-trips', async () => {
  const src = await fresh('src');
  await mkdir(join(src, 'media'));
  await writeFile(join(src, 'a.txt'), 'alpha');
  await writeFile(join(src, 'media', 'b.mp4'), 'bravo');
  const zip = join(dir, 'ok.zip');
  const made = await zipFiles(src, ['a.txt', 'media/b.mp4'], zip);
  assert.equal(made.totalBytes, 10);
  const out = await fresh('out-ok');
  const res = await safeUnzip(zip, out, limits);
  assert.deepEqual(res.files.sort(), ['a.txt', 'media/b.mp4']);
  assert.equal(await readFile(join(out, 'media', 'b.mp4'), 'utf8'), 'bravo');
});

for (const [label, entries, message] of [
  ['parent traversal', [{ name: '../evil.txt', data: 'x' }], /outside|invalid|relative/i],
  ['absolute name', [{ name: '/etc/evil.txt', data: 'x' }], /absolute|invalid|outside/i],
  ['symlink', [{ name: 'link', data: '/etc/passwd', symlink: true }], /symbolic link/],
  ['reserved folder', [{ name: '.out/out_1/o.mp4', data: 'x' }], /reserved/],
  ['reserved folder behind a dot segment', [{ name: './.out/out_1/o.mp4', data: 'x' }], /reserved|invalid/],
  ['bomb ratio', [{ name: 'zeros.bin', zeros: 20 * 1024 * 1024 }], /ratio/],
  ['too many entries', Array.from({ length: 101 }, (_, i) => ({ name: `f${i}.txt`, data: 'x' })), /more than 100 entries/],
] as const) {
  test(`refuses: ${label}, writing nothing outside the folder`, async () => {
    const zip = join(dir, `${label.replace(/ /g, '-')}.zip`);
    pyZip(zip, entries as any);
    const out = await fresh(`out-${label.replace(/ /g, '-')}`);
    await assert.rejects(safeUnzip(zip, out, limits), (err: Error) => err instanceof ArchiveRefused && message.test(err.message));
    assert.deepEqual((await readdir(dir)).filter((n) => n.startsWith('evil')), []);
  });
}

test('refuses more inflated bytes than allowed in total', async () => {
  const zip = join(dir, 'big.zip');
  pyZip(zip, [{ name: 'a.bin', data: 'x'.repeat(600) }, { name: 'b.bin', data: 'y'.repeat(600) }]);
  await assert.rejects(safeUnzip(zip, await fresh('out-big'), { ...limits, maxTotalBytes: 1000 }), /more than 1000 bytes/);
});

test('refuses something that is not a zip', async () => {
  const path = join(dir, 'not.zip');
  await writeFile(path, 'hello');
  await assert.rejects(safeUnzip(path, await fresh('out-not'), limits), ArchiveRefused);
});
