import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { ErrorStatus } from '../core/commands/error-status.ts';
import { ffmpeg } from '../core/command-line/testing/ffmpeg-test-support.ts';
import { testConfinement } from '../core/confine/testing/test-confinement.ts';
import type { StepOutput } from '../core/jobs/step-spec.ts';
import { FileProber } from '../core/media/file-prober.ts';
import { collectOutputs, listFiles, type CollectOptions } from './outputs.ts';
import { makeClip, startFileServer, stepFailure, zipEntryNames, type FileServer } from './testing/runner-fixtures.ts';

describe('collectOutputs', () => {
  let server: FileServer;
  let dir: string;
  let options: CollectOptions;

  before(async () => {
    server = await startFileServer();
    const { confinement, uids } = await testConfinement();
    options = { signal: new AbortController().signal, prober: new FileProber({ confinement, uids }), maxFiles: 100 };
  });
  after(() => server.close());
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'runner-outputs-'));
    server.uploads.clear();
    server.statuses.clear();
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const fileOutput = (alias: string, fileName: string): StepOutput => ({
    alias,
    fileName,
    kind: 'file',
    uploadUrl: `${server.url}/put/${alias}?sig=x`,
  });

  /** The folder runStep gives an output, made ready for ffmpeg to write into. */
  async function outputFolder(alias: string): Promise<string> {
    const folder = join(dir, '.out', alias);
    await mkdir(folder, { recursive: true });
    return folder;
  }

  test('a file output is probed and PUT whole to its URL, with its size and media type', async () => {
    const clip = await readFile(await makeClip(await outputFolder('out_1'), 'small.mp4'));
    const [result] = await collectOutputs([fileOutput('out_1', 'small.mp4')], dir, new Map(), options);
    assert.equal(result.alias, 'out_1');
    assert.equal(result.fileName, 'small.mp4');
    assert.equal(result.size, clip.length);
    assert.equal(result.media.codec, 'h264');
    assert.equal(result.media.width, 64);
    assert.equal(result.media.height, 48);
    const upload = server.uploads.get('/put/out_1');
    assert.ok(upload, 'uploaded');
    assert.ok(upload.body.equals(clip));
    assert.equal(upload.contentType, 'video/mp4');
  });

  test('a declared output that ffmpeg did not write, or left empty, fails OUTPUT_FILE_NOT_CREATED and nothing is stored', async () => {
    await makeClip(await outputFolder('out_1'), 'a.mp4');
    await outputFolder('out_2');
    const outputs = [fileOutput('out_1', 'a.mp4'), fileOutput('out_2', 'b.mp4')];
    assert.match(
      await stepFailure(collectOutputs(outputs, dir, new Map(), options), ErrorStatus.OUTPUT_FILE_NOT_CREATED),
      /did not write out_2 \(b\.mp4\)/,
    );

    await writeFile(join(dir, '.out/out_2/b.mp4'), '');
    await stepFailure(collectOutputs(outputs.slice(1), dir, new Map(), options), ErrorStatus.OUTPUT_FILE_NOT_CREATED);
    assert.deepEqual([...server.uploads.keys()], ['/put/out_1'], 'only the output before the missing one was stored');
  });

  test('a playlist travels as one zip of its manifest and segments; more files than allowed fail TOO_MANY_OUTPUT_FILES', async () => {
    const folder = await outputFolder('out_playlist_1');
    const segmented = '-v error -f lavfi -i testsrc=duration=1:size=64x48:rate=10 -c:v libx264 -preset ultrafast -g 2 -f hls -hls_time 0.2';
    const hls = await ffmpeg([...segmented.split(' '), '-hls_list_size', '0', 'index.m3u8'], folder);
    assert.equal(hls.code, 0, hls.stderr);
    const written = (await readdir(folder)).sort();
    assert.ok(written.length >= 3, `files: ${written.join(', ')}`);
    const playlist: StepOutput = {
      alias: 'out_playlist_1',
      fileName: 'index.m3u8',
      kind: 'playlist',
      uploadUrl: `${server.url}/put/playlist`,
    };

    const [result] = await collectOutputs([playlist], dir, new Map(), options);
    const zip = server.uploads.get('/put/playlist')!;
    assert.equal(zip.contentType, 'application/zip');
    assert.deepEqual(await zipEntryNames(zip.body), written);
    assert.equal(result.fileCount, written.length);
    assert.equal(result.compressedSize, zip.body.length);
    assert.equal(result.media.file_format, 'hls');

    const message = await stepFailure(
      collectOutputs([playlist], dir, new Map(), { ...options, maxFiles: 2 }),
      ErrorStatus.TOO_MANY_OUTPUT_FILES,
    );
    assert.match(message, new RegExp(`out_playlist_1: ffmpeg wrote ${written.length} files, more than the 2`));
  });

  test('OUTPUT_FOLDER zips only what the command wrote or changed, never the inputs or what was there before', async () => {
    await mkdir(join(dir, '.in/in_1'), { recursive: true });
    await writeFile(join(dir, '.in/in_1/clip.mp4'), 'input');
    await writeFile(join(dir, 'logo.txt'), 'from the archive'); // extracted input, left alone
    await writeFile(join(dir, 'notes.txt'), 'from the archive');
    const before = await listFiles(dir, ['.in', '.out']);
    assert.deepEqual([...before.keys()].sort(), ['logo.txt', 'notes.txt']);

    await mkdir(join(dir, 'frames'));
    await writeFile(join(dir, 'frames/001.png'), 'frame');
    await writeFile(join(dir, 'notes.txt'), 'rewritten by the command');
    await writeFile(join(dir, '.in/in_1/clip.mp4'), 'changed input, still not an output');
    const folder: StepOutput = {
      alias: 'OUTPUT_FOLDER',
      fileName: 'output_folder.zip',
      kind: 'folder',
      uploadUrl: `${server.url}/put/folder`,
    };
    const [result] = await collectOutputs([folder], dir, before, options);

    const zip = server.uploads.get('/put/folder')!;
    assert.deepEqual(await zipEntryNames(zip.body), ['frames/001.png', 'notes.txt']);
    assert.equal(result.fileCount, 2);
    assert.equal(result.size, 'frame'.length + 'rewritten by the command'.length);
    assert.equal(result.media.mime_type, 'application/zip');

    const untouched = await listFiles(dir, ['.in', '.out']);
    const message = await stepFailure(collectOutputs([folder], dir, untouched, options), ErrorStatus.OUTPUT_FILE_NOT_CREATED);
    assert.match(message, /wrote no files/);
  });

  test('storage refusing the PUT fails OUTPUT_UPLOAD_FAILED naming the output, without the signed query', async () => {
    await makeClip(await outputFolder('out_1'), 'a.mp4');
    server.statuses.set('/put/out_1', 403);
    const message = await stepFailure(
      collectOutputs([fileOutput('out_1', 'a.mp4')], dir, new Map(), options),
      ErrorStatus.OUTPUT_UPLOAD_FAILED,
    );
    assert.equal(message, 'could not store out_1: storage answered HTTP 403');
  });
});
