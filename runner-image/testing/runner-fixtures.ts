// For the runner's tests only: a loopback HTTP server that serves inputs and takes uploads, a tiny
// clip made by ffmpeg, zips built in memory, and step specs built the way the engine builds them.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import yauzl from 'yauzl';
import yazl from 'yazl';
import { parseFfmpegCommand } from '../../core/command-line/parse.ts';
import type { StepInput, StepOutput, StepSpec } from '../../core/jobs/step-spec.ts';
import { StepFailure } from '../step-failure.ts';

const run = promisify(execFile);

export interface Upload {
  body: Buffer;
  contentType: string | undefined;
}

export interface Post {
  path: string;
  authorization: string | undefined;
  body: Buffer;
}

export interface FileServer {
  /** http://127.0.0.1:PORT */
  url: string;
  /** The allow entry that opens this server to the address policy. */
  allowEntry: string;
  /** What GET answers, by decoded path ('/my clip.mp4'); other paths answer 404. */
  files: Map<string, Buffer>;
  /** Paths answered with this status instead, whatever the method. */
  statuses: Map<string, number>;
  /** GET paths whose headers are sent but whose body never comes (a download in progress). */
  stalled: Set<string>;
  /** Every PUT body, by path. */
  uploads: Map<string, Upload>;
  /** Every POST (runner events sent to the API), in order. */
  posts: Post[];
  /** Every request, as 'METHOD /path?query'. */
  requests: string[];
  close(): Promise<void>;
}

/** A file server on 127.0.0.1, port 0: stands in for input hosts and for presigned storage URLs alike. */
export async function startFileServer(): Promise<FileServer> {
  const files = new Map<string, Buffer>();
  const statuses = new Map<string, number>();
  const stalled = new Set<string>();
  const uploads = new Map<string, Upload>();
  const posts: Post[] = [];
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const status = statuses.get(path);
      if (status !== undefined) return void res.writeHead(status).end();
      if (req.method === 'PUT') {
        uploads.set(path, { body: Buffer.concat(chunks), contentType: req.headers['content-type'] });
        return void res.writeHead(200).end();
      }
      if (req.method === 'POST') {
        posts.push({ path, authorization: req.headers.authorization, body: Buffer.concat(chunks) });
        return void res.writeHead(200).end();
      }
      if (stalled.has(path)) return void res.writeHead(200, { 'content-length': '1000' }).flushHeaders();
      const body = files.get(path);
      if (body === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-length': body.length }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    allowEntry: `127.0.0.1:${port}`,
    files,
    statuses,
    stalled,
    uploads,
    posts,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections(); // stalled responses would hold close() forever
        server.close(() => resolve());
      }),
  };
}

/** A 1 s 64x48 H.264 clip (10 fps, no audio), written to `dir/name`; resolves with its path. */
export async function makeClip(dir: string, name = 'clip.mp4'): Promise<string> {
  const path = join(dir, name);
  const args = '-hide_banner -loglevel error -nostdin -y -f lavfi -i testsrc=duration=1:size=64x48:rate=10 -c:v libx264 -preset ultrafast';
  await run('ffmpeg', [...args.split(' '), '-pix_fmt', 'yuv420p', path]);
  return path;
}

/** A zip of `files` (name -> text), in memory. */
export async function zipBuffer(files: Record<string, string>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, text] of Object.entries(files)) zip.addBuffer(Buffer.from(text), name);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The entry names of a zip held in memory. */
export async function zipEntryNames(zip: Buffer): Promise<string[]> {
  const file = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromBuffer(zip, { lazyEntries: true }, (err, z) => (err ? reject(err) : resolve(z))),
  );
  const names: string[] = [];
  await new Promise<void>((resolve, reject) => {
    file.on('entry', (entry: yauzl.Entry) => {
      names.push(entry.fileName);
      file.readEntry();
    });
    file.on('end', resolve);
    file.on('error', reject);
    file.readEntry();
  });
  return names.sort();
}

export interface SpecParts {
  inputs?: StepInput[];
  outputs: StepOutput[];
  archive?: StepSpec['archive'];
  step?: number;
  /** Chain steps: outputs of earlier steps that this one reads. */
  earlierOutputAliases?: string[];
  /** Allow entries of the address policy. */
  allow?: string[];
  timeoutSeconds?: number;
}

/** A StepSpec as core/engine/step-spec-builder.ts makes one, its command parsed like the API parses it. */
export function stepSpec(command: string, parts: SpecParts): StepSpec {
  const outputFolder = parts.outputs.some((o) => o.kind === 'folder');
  const earlier = new Set(parts.earlierOutputAliases ?? []);
  const parsed = parseFfmpegCommand(command, {
    inputAliases: new Set((parts.inputs ?? []).map((i) => i.alias).filter((alias) => !earlier.has(alias))),
    outputAliases: new Set(outputFolder ? [] : parts.outputs.map((o) => o.alias)),
    earlierOutputAliases: earlier,
    outputFolder,
  });
  return {
    commandId: '00000000-0000-4000-8000-000000000001',
    step: parts.step ?? 0,
    command: parsed,
    inputs: parts.inputs ?? [],
    archive: parts.archive,
    outputs: parts.outputs,
    threads: 1,
    timeoutSeconds: parts.timeoutSeconds ?? 30,
    download: { maxBytes: 10_000_000, timeoutSeconds: 10, allow: parts.allow ?? [] },
  };
}

/** Asserts that `work` fails as a StepFailure with `status`; resolves with its message. */
export async function stepFailure(work: Promise<unknown>, status: string): Promise<string> {
  const err = await work.then(
    () => assert.fail('expected a StepFailure'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof StepFailure, String(err));
  assert.equal(err.errorStatus, status, err.message);
  return err.message;
}
