import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { crc32 as zlibCrc32, deflateRawSync } from 'node:zlib';
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
    assert.deepEqual(
      (await readdir(dir)).filter((n) => n.startsWith('evil')),
      [],
    );
  });
}

test('refuses more inflated bytes than allowed in total', async () => {
  const zip = join(dir, 'big.zip');
  pyZip(zip, [
    { name: 'a.bin', data: 'x'.repeat(600) },
    { name: 'b.bin', data: 'y'.repeat(600) },
  ]);
  await assert.rejects(safeUnzip(zip, await fresh('out-big'), { ...limits, maxTotalBytes: 1000 }), /more than 1000 bytes/);
});

test('refuses something that is not a zip', async () => {
  const path = join(dir, 'not.zip');
  await writeFile(path, 'hello');
  await assert.rejects(safeUnzip(path, await fresh('out-not'), limits), ArchiveRefused);
});

// ---- hostile zips built byte by byte (APPNOTE 4.3.7 local header, 4.3.12 central header, 4.3.16 end record) ----

interface RawEntry {
  name: string;
  /** 0 stored, 8 deflated */
  method: 0 | 8;
  /** the bytes as they sit in the archive */
  data: Buffer;
  size: number;
  crc: number;
}

function stored(name: string, bytes: Buffer, crc = zlibCrc32(bytes)): RawEntry {
  return { name, method: 0, data: bytes, size: bytes.length, crc };
}

function deflated(name: string, bytes: Buffer): RawEntry {
  return { name, method: 8, data: deflateRawSync(bytes, { level: 9 }), size: bytes.length, crc: zlibCrc32(bytes) };
}

function localHeader(e: RawEntry): Buffer {
  const name = Buffer.from(e.name);
  const h = Buffer.alloc(30);
  h.writeUInt32LE(0x04034b50, 0);
  h.writeUInt16LE(20, 4); // version needed
  h.writeUInt16LE(0x0800, 6); // UTF-8 names
  h.writeUInt16LE(e.method, 8);
  h.writeUInt32LE(e.crc, 14);
  h.writeUInt32LE(e.data.length, 18);
  h.writeUInt32LE(e.size, 22);
  h.writeUInt16LE(name.length, 26);
  return Buffer.concat([h, name]);
}

function centralHeader(e: RawEntry, offset: number): Buffer {
  const name = Buffer.from(e.name);
  const h = Buffer.alloc(46);
  h.writeUInt32LE(0x02014b50, 0);
  h.writeUInt16LE(0x031e, 4); // made by: unix, 3.0
  h.writeUInt16LE(20, 6);
  h.writeUInt16LE(0x0800, 8);
  h.writeUInt16LE(e.method, 10);
  h.writeUInt32LE(e.crc, 16);
  h.writeUInt32LE(e.data.length, 20);
  h.writeUInt32LE(e.size, 24);
  h.writeUInt16LE(name.length, 28);
  h.writeUInt32LE((0o100644 << 16) >>> 0, 38); // regular file
  h.writeUInt32LE(offset, 42);
  return Buffer.concat([h, name]);
}

function endRecord(count: number, cdSize: number, cdOffset: number): Buffer {
  const h = Buffer.alloc(22);
  h.writeUInt32LE(0x06054b50, 0);
  h.writeUInt16LE(count, 8);
  h.writeUInt16LE(count, 10);
  h.writeUInt32LE(cdSize, 12);
  h.writeUInt32LE(cdOffset, 16);
  return h;
}

/** `body` holds the local entries; `directory` lists [entry, local header offset] pairs, overlaps allowed. */
function rawZip(body: Buffer, directory: [RawEntry, number][]): Buffer {
  const cd = Buffer.concat(directory.map(([e, offset]) => centralHeader(e, offset)));
  return Buffer.concat([body, cd, endRecord(directory.length, cd.length, body.length)]);
}

/** An honest archive: each entry once, one after the other. */
function honestZip(entries: RawEntry[]): Buffer {
  const parts: Buffer[] = [];
  const directory: [RawEntry, number][] = [];
  let offset = 0;
  for (const e of entries) {
    directory.push([e, offset]);
    const local = Buffer.concat([localHeader(e), e.data]);
    parts.push(local);
    offset += local.length;
  }
  return rawZip(Buffer.concat(parts), directory);
}

async function refusedWithNothingWritten(label: string, zip: Buffer, message: RegExp, opts: UnzipLimits = limits) {
  const path = join(dir, `${label}.zip`);
  await writeFile(path, zip);
  const out = await fresh(`out-${label}`);
  await assert.rejects(safeUnzip(path, out, opts), (err: Error) => {
    assert.ok(err instanceof ArchiveRefused, `${label}: ${err}`);
    assert.match(err.message, message);
    return true;
  });
  assert.deepEqual(await readdir(out, { recursive: true }), [], `${label}: something was written`);
}

test('the byte-level builder makes zips that extract (so the refusals below are about the attack)', async () => {
  const path = join(dir, 'raw-ok.zip');
  await writeFile(path, honestZip([stored('a.txt', Buffer.from('alpha')), deflated('b.txt', Buffer.alloc(5000, 7))]));
  const out = await fresh('out-raw-ok');
  const res = await safeUnzip(path, out, limits);
  assert.deepEqual(res.files.sort(), ['a.txt', 'b.txt']);
  assert.deepEqual(await readFile(join(out, 'b.txt')), Buffer.alloc(5000, 7));
});

test('attack: many central-directory entries pointing at the same local entry are refused before extraction', async () => {
  // 64 KiB stored once, listed 90 times: 5.6 MiB out of a 70 KB archive, ratio 1 per entry.
  const shared = stored('shared.bin', randomBytes(64 * 1024));
  const local = Buffer.concat([localHeader(shared), shared.data]);
  const directory = Array.from({ length: 90 }, (_, i): [RawEntry, number] => [{ ...shared, name: `copy${i}.bin` }, 0]);
  await refusedWithNothingWritten('same-offset', rawZip(local, directory), /overlap/);
});

test("attack: an entry whose local header sits inside another entry's data is refused", async () => {
  // The outer stored entry's data is the inner entry (header and bytes): two names, one set of bytes.
  const inner = stored('inner.bin', randomBytes(50 * 1024));
  const innerLocal = Buffer.concat([localHeader(inner), inner.data]);
  const outer = stored('outer.bin', innerLocal);
  const outerHeader = localHeader(outer);
  const body = Buffer.concat([outerHeader, innerLocal]);
  await refusedWithNothingWritten(
    'nested',
    rawZip(body, [
      [outer, 0],
      [inner, outerHeader.length],
    ]),
    /overlap/,
  );
});

test('attack: small entries, each under the per-entry ratio check, inflating far past the archive size are refused', async () => {
  // 40 entries of 1 MiB of zeros (not above the 1 MiB per-entry threshold), about 1 KB each compressed.
  const entries = Array.from({ length: 40 }, (_, i) => deflated(`z${i}.bin`, Buffer.alloc(1024 * 1024)));
  await refusedWithNothingWritten('whole-ratio', honestZip(entries), /whole archive.*ratio|ratio.*whole archive/);
});

test('attack: an entry whose bytes do not match its CRC-32 is refused and its file removed', async () => {
  const good = stored('good.txt', Buffer.from('fine'));
  const bad = stored('bad.bin', Buffer.from('tampered bytes'), 0x12345678);
  await refusedWithNothingWritten('bad-crc', honestZip([good, bad]), /bad\.bin.*CRC-32/);
});
