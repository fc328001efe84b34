// Benchmark: downloading a large stored file from the service, next to the same file from a plain
// static server, over loopback with curl. The service runs as `npm start` runs it (compiled, in its
// own process; `--from-sources` runs it through tsx), with local storage; the file (random bytes, made
// here in a temp folder and removed afterwards) is stored straight through LocalStorage on the
// service's storage folder as a private file and fetched through a presigned URL, so every download
// pays the signature check. The baselines: a node:http server piping fs.createReadStream
// (static-file-server.ts) and `python3 -m http.server` (when there is a python3); the faster is the
// row's baseline.
// Downloads alternate between the servers (the order turning each round) after one warm-up each, so all
// read the file from the page cache. Before timing, a range of the service's answer is compared with
// the file's bytes.
// Run: npx tsx e2e/bench/stored-file-download.ts [runs=5] [sizeMiB=1024] [--from-sources]
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { LocalStorage } from '../../core/storage/local-storage.ts';
import { freePort, startServiceProcess } from '../harness.ts';
import { median, reportRow } from './stats.ts';

const MiB = 1024 * 1024;
const run = promisify(execFile);
const [runs = 5, sizeMiB = 1024] = process.argv
  .slice(2)
  .filter((a) => /^\d+$/.test(a))
  .map(Number);
const compiled = !process.argv.includes('--from-sources');
const size = sizeMiB * MiB;

interface Source {
  name: string;
  url: string;
  seconds: number[];
}

const dir = await mkdtemp(join(tmpdir(), 'ffop-download-bench-'));
const file = join(dir, 'large.bin');
const children: ChildProcess[] = [];
let closeService: (() => Promise<void>) | undefined;
try {
  await writeRandomFile(file, size);
  const signingKey = randomBytes(32).toString('hex');
  const svc = await startServiceProcess({ compiled, env: { FFOP_SIGNING_KEY: signingKey } });
  closeService = () => svc.close();
  // The service's own storage folder and key (config.ts: FFOP_STORAGE_DIR defaults to <data>/storage).
  const storage = new LocalStorage({ root: join(svc.env.FFOP_DATA_DIR, 'storage'), publicBaseUrl: svc.url, signingKey });
  const key = 'bench/private/large.bin';
  await storage.putFile(key, file, 'application/octet-stream'); // a hard link: no copy
  const service: Source = { name: 'service (presigned private URL)', url: await storage.presignGet(key, 3600), seconds: [] };

  const nodePort = await freePort();
  const staticServer = fileURLToPath(new URL('static-file-server.ts', import.meta.url));
  children.push(spawn(process.execPath, ['--import', 'tsx', staticServer, String(nodePort), file], { stdio: 'ignore' }));
  const statics: Source[] = [{ name: 'node:http + fs.createReadStream', url: `http://127.0.0.1:${nodePort}/large.bin`, seconds: [] }];
  if (
    await run('python3', ['--version']).then(
      () => true,
      () => false,
    )
  ) {
    const pythonPort = await freePort();
    const args = ['-m', 'http.server', String(pythonPort), '--bind', '127.0.0.1', '--directory', dir];
    children.push(spawn('python3', args, { stdio: 'ignore' }));
    statics.push({ name: 'python3 -m http.server', url: `http://127.0.0.1:${pythonPort}/large.bin`, seconds: [] });
  } else {
    console.log('python3 not found: the node:http server is the only baseline');
  }
  for (const s of statics) await waitUntilServing(s.url);

  await checkRange(service.url, file, Math.floor(size / 3), MiB);
  const sources = [service, ...statics];
  for (const s of sources) await download(s.url); // warm-up: page cache, connections, JIT
  for (let i = 0; i < runs; i++) {
    for (let j = 0; j < sources.length; j++) {
      const s = sources[(i + j) % sources.length];
      s.seconds.push(await download(s.url));
    }
  }

  const speed = (seconds: number) => `${(size / MiB / seconds).toFixed(0)} MiB/s`;
  for (const s of sources) {
    console.log(
      `${s.name}: median ${median(s.seconds).toFixed(3)} s (${speed(median(s.seconds))}); runs ${s.seconds.map((x) => x.toFixed(3)).join(', ')} s`,
    );
  }
  const baseline = statics.reduce((a, b) => (median(a.seconds) <= median(b.seconds) ? a : b));
  const [ms, mb] = [median(service.seconds), median(baseline.seconds)];
  reportRow({
    what: `${sizeMiB} MiB stored-file download, curl over loopback, presigned private URL (median of ${runs})`,
    service: `${ms.toFixed(2)} s (${speed(ms)})`,
    baseline: `${mb.toFixed(2)} s (${speed(mb)}, ${baseline.name}, the faster static server)`,
    ratio: `${(mb / ms).toFixed(2)}x`,
    goal: '>= 0.9x of a static server',
  });
} finally {
  for (const child of children) child.kill();
  await closeService?.();
  await rm(dir, { recursive: true, force: true });
}

/** `size` random bytes (so no layer can compress or skip them), written 16 MiB at a time. */
async function writeRandomFile(path: string, bytes: number): Promise<void> {
  const handle = await open(path, 'wx');
  try {
    for (let written = 0; written < bytes;) {
      const chunk = randomBytes(Math.min(16 * MiB, bytes - written));
      await handle.write(chunk);
      written += chunk.length;
    }
  } finally {
    await handle.close();
  }
}

/** Seconds curl took to fetch the whole of `url` into /dev/null; throws unless it got 200 and every byte. */
async function download(url: string): Promise<number> {
  const { stdout } = await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code} %{size_download} %{time_total}', url]);
  const [status, bytes, seconds] = stdout.trim().split(' ');
  if (status !== '200' || Number(bytes) !== size) throw new Error(`${url} answered ${status} with ${bytes} of ${size} bytes`);
  return Number(seconds);
}

/** Fails unless the service's answer to a Range request holds the file's bytes there. */
async function checkRange(url: string, path: string, start: number, length: number): Promise<void> {
  const res = await fetch(url, { headers: { Range: `bytes=${start}-${start + length - 1}` } });
  const got = Buffer.from(await res.arrayBuffer());
  const handle = await open(path, 'r');
  const want = Buffer.alloc(length);
  try {
    await handle.read(want, 0, length, start);
  } finally {
    await handle.close();
  }
  const hash = (b: Buffer) => createHash('sha256').update(b).digest('hex');
  if (res.status !== 206 || hash(got) !== hash(want))
    throw new Error(`the service's range ${start}+${length} differs (status ${res.status})`);
}

async function waitUntilServing(url: string): Promise<void> {
  for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 100))) {
    const ok = await fetch(url, { method: 'HEAD' }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${url} did not answer`);
  }
}
