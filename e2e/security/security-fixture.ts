// Pieces the security suite's test files build their fixtures from: canary media files outside every
// working folder, a loopback listener that is not on the allowlist and counts connections, zips and
// playlists written from text, and the "without the defence" controls (the test's own ffprobe, which
// runs unconfined as root, opening exactly what the service's sandboxed one was given).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { zipFiles } from '../../core/archive/zip-files.ts';
import type { ApiClient } from '../harness.ts';

export { waitForFile } from '../harness.ts';

const run = promisify(execFile);

/** The world-readable canary: a video no test produces otherwise. */
export const CANARY_VIDEO = { width: 304, height: 176, seconds: 1.2 };
/** The root-only canary: audio only, 8 kHz. */
export const CANARY_AUDIO = { seconds: 2.7, sampleRate: 8000 };

export interface Canaries {
  dir: string;
  /** canary.mp4, mode 0644 in a 0755 folder: any local user could read it. */
  readable: string;
  /** secret.m4a, mode 0600: only root can read it. */
  rootOnly: string;
  /** In both files' metadata: output bytes that contain it came from a canary. */
  marker: string;
  /** Fails unless both files are still there with the same mode and bytes. */
  assertUntouched(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Both canaries are formats an HLS playlist may name in ffmpeg 5.1 (mp4, m4a): a .wav segment is
 * refused by the HLS demuxer itself, so a wav canary would prove nothing about the sandbox.
 */
export async function makeCanaries(): Promise<Canaries> {
  const dir = await mkdtemp(join(tmpdir(), 'ffop-canary-'));
  await chmod(dir, 0o755);
  const marker = `FFOP-CANARY-${randomBytes(6).toString('hex')}`;
  const readable = join(dir, 'canary.mp4');
  const rootOnly = join(dir, 'secret.m4a');
  await makeVideo(readable, { ...CANARY_VIDEO, title: marker });
  await ffmpeg([
    '-f',
    'lavfi',
    '-i',
    `sine=frequency=660:sample_rate=${CANARY_AUDIO.sampleRate}:duration=${CANARY_AUDIO.seconds}`,
    '-c:a',
    'aac',
    '-movflags',
    '+faststart',
    '-metadata',
    `title=${marker}`,
    rootOnly,
  ]);
  await chmod(readable, 0o644);
  await chmod(rootOnly, 0o600);
  const fingerprint = async (path: string) => {
    const s = await stat(path);
    return {
      mode: s.mode & 0o7777,
      sha256: createHash('sha256')
        .update(await readFile(path))
        .digest('hex'),
    };
  };
  const original = { readable: await fingerprint(readable), rootOnly: await fingerprint(rootOnly) };
  return {
    dir,
    readable,
    rootOnly,
    marker,
    async assertUntouched() {
      assert.deepEqual(await fingerprint(readable), original.readable, 'the readable canary was changed');
      assert.deepEqual(await fingerprint(rootOnly), original.rootOnly, 'the root-only canary was changed');
      assert.equal((await stat(dir)).mode & 0o7777, 0o755);
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

async function ffmpeg(args: string[]): Promise<void> {
  await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args]);
}

/** A short H.264 mp4 (moov first, so it can be read as a stream), optionally titled. */
export async function makeVideo(path: string, o: { width: number; height: number; seconds: number; title?: string }): Promise<string> {
  await mkdir(dirname(path), { recursive: true });
  await ffmpeg([
    '-f',
    'lavfi',
    '-i',
    `testsrc=size=${o.width}x${o.height}:rate=25:duration=${o.seconds}`,
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-pix_fmt',
    'yuv420p',
    '-movflags',
    '+faststart',
    ...(o.title ? ['-metadata', `title=${o.title}`] : []),
    path,
  ]);
  return path;
}

/** An HLS media playlist of 1 s segments; `map` adds an #EXT-X-MAP (fMP4 init section). */
export function hlsPlaylist(segments: string[], map?: string): string {
  const lines = ['#EXTM3U', '#EXT-X-VERSION:7', '#EXT-X-TARGETDURATION:3', '#EXT-X-MEDIA-SEQUENCE:0'];
  if (map) lines.push(`#EXT-X-MAP:URI="${map}"`);
  for (const segment of segments) lines.push('#EXTINF:1.0,', segment);
  lines.push('#EXT-X-ENDLIST', '');
  return lines.join('\n');
}

/** An HLS master playlist whose variants are `variants`. */
export function hlsMasterPlaylist(variants: string[]): string {
  return ['#EXTM3U', ...variants.flatMap((v) => ['#EXT-X-STREAM-INF:BANDWIDTH=100000', v]), ''].join('\n');
}

/** A static DASH manifest with one representation read from `baseUrl`. */
export function dashManifest(baseUrl: string): string {
  return (
    `<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011" type="static" ` +
    `mediaPresentationDuration="PT1S" minBufferTime="PT1S">
  <Period>
    <AdaptationSet mimeType="video/mp4">
      <Representation id="1" bandwidth="100000">
        <BaseURL>${baseUrl}</BaseURL>
      </Representation>
    </AdaptationSet>
  </Period>
</MPD>
`
  );
}

/** Writes a zip holding `entries` (name -> text or bytes) to `zipPath`. */
export async function writeZip(zipPath: string, entries: Record<string, string | Buffer>): Promise<void> {
  const src = await mkdtemp(join(tmpdir(), 'ffop-zip-'));
  try {
    for (const [name, content] of Object.entries(entries)) {
      await mkdir(dirname(join(src, name)), { recursive: true });
      await writeFile(join(src, name), content);
    }
    await zipFiles(src, Object.keys(entries), zipPath);
  } finally {
    await rm(src, { recursive: true, force: true });
  }
}

/**
 * The control: the test's own ffprobe (unconfined, root), given the same files the attack gives the
 * service and the same `-protocol_whitelist` unless told otherwise. Returns ffprobe's JSON, or null
 * when it could not read them.
 */
export async function probeUnconfined(files: Record<string, string | Buffer>, open: string, protocols = 'file'): Promise<any> {
  const dir = await mkdtemp(join(tmpdir(), 'ffop-control-'));
  try {
    for (const [name, content] of Object.entries(files)) {
      await mkdir(dirname(join(dir, name)), { recursive: true });
      await writeFile(join(dir, name), content);
    }
    const { stdout } = await run(
      'ffprobe',
      ['-v', 'error', '-protocol_whitelist', protocols, '-print_format', 'json', '-show_format', '-show_streams', open],
      { cwd: dir },
    );
    return JSON.parse(stdout);
  } catch {
    return null;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** True when ffprobe's JSON shows one of the canaries (the video's size or the audio's duration). */
export function probeShowsCanary(probe: any): boolean {
  if (!probe) return false;
  const streams: any[] = probe.streams ?? [];
  const video = streams.some((s) => s.width === CANARY_VIDEO.width && s.height === CANARY_VIDEO.height);
  const audio = streams.some((s) => s.codec_type === 'audio' && Number(s.sample_rate) === CANARY_AUDIO.sampleRate);
  return video || audio;
}

/**
 * A media record (file record or command output) that shows nothing of either canary, nor of
 * `other` (e.g. another account's file): not its size and not its duration.
 */
export function assertNotFrom(
  record: { width?: number | null; height?: number | null; duration?: number | null },
  what: string,
  other?: { width: number; height: number; seconds: number },
): void {
  const looksLike = (m: { width: number; height: number; seconds: number }) =>
    (record.width === m.width && record.height === m.height) || (record.duration != null && Math.abs(record.duration - m.seconds) < 0.05);
  assert.ok(!looksLike(CANARY_VIDEO), `${what} shows the readable canary: ${JSON.stringify(record)}`);
  assert.ok(
    !(record.duration != null && Math.abs(record.duration - CANARY_AUDIO.seconds) < 0.05),
    `${what} shows the root-only canary: ${JSON.stringify(record)}`,
  );
  if (other) assert.ok(!looksLike(other), `${what} shows another account's file: ${JSON.stringify(record)}`);
}

/** The bytes at `url` do not contain `marker`. */
export async function assertBytesFree(url: string, marker: string): Promise<void> {
  const bytes = Buffer.from(await (await fetch(url)).arrayBuffer());
  assert.ok(bytes.length > 0, `nothing at ${url}`);
  assert.equal(bytes.includes(marker), false, `${url} holds canary bytes`);
}

export interface CountingListener {
  port: number;
  url: string;
  /** Connections accepted since start. */
  connections(): number;
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 that is NOT on the service's allowlist: serves `body` at any path, counts connections. */
export async function startCountingListener(body: Buffer): Promise<CountingListener> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length }).end(body);
  });
  server.on('connection', (socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    connections: () => connections,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A direct upload of `data` in one part (init-upload, PUT, complete-upload); returns the file id. */
export async function uploadFile(api: ApiClient, filename: string, data: Buffer | string, isPrivate = false): Promise<string> {
  const bytes = Buffer.from(data);
  const init = await api.post('/v1/files/init-upload', { filename, size_bytes: bytes.length, is_private: isPrivate });
  assert.equal(init.status, 200, JSON.stringify(init.body));
  const put = await fetch(init.body.upload_urls[0], { method: 'PUT', body: new Uint8Array(bytes) });
  assert.equal(put.status, 200, await put.text());
  const done = await api.post(`/v1/files/${init.body.file_id}/complete-upload`, {
    parts: [{ part_number: 1, etag: put.headers.get('etag') }],
  });
  assert.equal(done.status, 200, JSON.stringify(done.body));
  return init.body.file_id;
}

/** Submits a command and waits for its end; returns the record. */
export async function runCommand(api: ApiClient, body: unknown): Promise<any> {
  return (await api.waitForEnd(await api.submit(body))).record;
}

/** A command's ending in one line, for the test report (t.diagnostic): the message's start and its last words. */
export function outcome(record: any): string {
  const message = String(record.error_message ?? '').replace(/\s+/g, ' ');
  const short = message.length > 260 ? `${message.slice(0, 60)} ... ${message.slice(-200)}` : message;
  return `${record.status} ${record.error_status ?? ''} ${short}`.trim();
}

/** The ending of a command that must not have read anything: FAILED, or SUCCESS showing nothing of the canaries. */
export async function assertReadNothing(
  record: any,
  canaries: Canaries,
  what: string,
  other?: { width: number; height: number; seconds: number },
): Promise<void> {
  assert.ok(record.status === 'FAILED' || record.status === 'SUCCESS', `${what}: ${JSON.stringify(record)}`);
  if (record.status === 'FAILED') {
    assert.ok(record.error_status && record.error_message, `${what}: a failure without a clear error: ${JSON.stringify(record)}`);
    return;
  }
  for (const [alias, output] of Object.entries<any>(record.output_files)) {
    assertNotFrom(output, `${what} ${alias}`, other);
    await assertBytesFree(output.storage_url, canaries.marker);
  }
}
