import assert from 'node:assert/strict';
import { access, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { setTimeout } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { ErrorStatus } from '../core/commands/error-status.ts';
import { downloadInputs, extractArchive, inputPaths } from './inputs.ts';
import { startFileServer, stepFailure, stepSpec, zipBuffer, type FileServer } from './testing/runner-fixtures.ts';

const noOutputs = [{ alias: 'out_1', fileName: 'out.mp4', kind: 'file' as const, uploadUrl: 'http://127.0.0.1:9/out' }];
const command = '-i {{in_1}} -i {{in_2}} {{out_1}}';

describe('downloadInputs', () => {
  let server: FileServer;
  let dir: string;
  const signal = new AbortController().signal;

  before(async () => {
    server = await startFileServer();
    server.files.set('/media/clip.mp4', Buffer.from('clip bytes'));
    server.files.set('/media/my clip (1).srt', Buffer.from('subtitle bytes'));
    server.files.set('/pack.zip', Buffer.from('zip bytes'));
  });
  after(() => server.close());
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'runner-inputs-'));
    server.requests.length = 0;
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  test('puts each input under .in/<alias>/ with a safe name from the URL, and counts the bytes', async () => {
    const spec = stepSpec(command, {
      inputs: [
        { alias: 'in_1', url: `${server.url}/media/clip.mp4?X-Signature=secret`, source: 'external' },
        { alias: 'in_2', url: `${server.url}/media/my%20clip%20(1).srt`, source: 'external' },
      ],
      archive: { url: `${server.url}/pack.zip`, source: 'external' },
      outputs: noOutputs,
      allow: [server.allowEntry],
    });
    const downloaded = await downloadInputs(spec, dir, signal);
    assert.deepEqual(
      [...downloaded.paths],
      [
        ['in_1', '.in/in_1/clip.mp4'],
        ['in_2', '.in/in_2/my_clip_1_.srt'],
      ],
    );
    // Known before the download (ffmpeg is started ahead with them): the same places.
    assert.deepEqual(inputPaths(spec), downloaded.paths);
    assert.equal(downloaded.archivePath, '.in/_archive/pack.zip');
    assert.equal(downloaded.bytes, 'clip bytes'.length + 'subtitle bytes'.length + 'zip bytes'.length);
    assert.equal(await readFile(join(dir, '.in/in_1/clip.mp4'), 'utf8'), 'clip bytes');
    assert.equal(await readFile(join(dir, '.in/in_2/my_clip_1_.srt'), 'utf8'), 'subtitle bytes');
  });

  test('refuses a private address without an allow entry, before any request; a storage URL skips the policy', async () => {
    const url = `${server.url}/media/clip.mp4`;
    const external = stepSpec(command, {
      inputs: [
        { alias: 'in_1', url, source: 'external' },
        { alias: 'in_2', url, source: 'external' },
      ],
      outputs: noOutputs,
    });
    const message = await stepFailure(downloadInputs(external, dir, signal), ErrorStatus.FORBIDDEN_INPUT_ADDRESS);
    assert.match(message, /^input in_1: GET http:\/\/127\.0\.0\.1:\d+\/media\/clip\.mp4 refused: 127\.0\.0\.1 is not a public address/);
    assert.deepEqual(server.requests, []);

    // URLs the service minted for its own storage are read directly, whatever their address.
    const storage = stepSpec(command, {
      inputs: [
        { alias: 'in_1', url, source: 'storage' },
        { alias: 'in_2', url, source: 'storage' },
      ],
      outputs: noOutputs,
    });
    assert.equal((await downloadInputs(storage, dir, signal)).bytes, 2 * 'clip bytes'.length);
  });

  test('an input at a refused IP address fails the command before any input is fetched', async () => {
    const spec = stepSpec(command, {
      inputs: [
        { alias: 'in_1', url: `${server.url}/media/clip.mp4`, source: 'external' },
        { alias: 'in_2', url: 'http://169.254.169.254/latest/meta-data.mp4', source: 'external' },
      ],
      outputs: noOutputs,
      allow: [server.allowEntry],
    });
    const message = await stepFailure(downloadInputs(spec, dir, signal), ErrorStatus.FORBIDDEN_INPUT_ADDRESS);
    assert.match(
      message,
      /^input in_2: GET http:\/\/169\.254\.169\.254\/latest\/meta-data\.mp4 refused: 169\.254\.169\.254 is not a public address/,
    );
    assert.deepEqual(server.requests, [], 'in_1 was not fetched either');
  });

  test('a URL without a file name fails INVALID_INPUT_FILE_NAME, its query string left out of the message', async () => {
    const spec = stepSpec(command, {
      inputs: [
        { alias: 'in_1', url: `${server.url}/media/clip.mp4`, source: 'external' },
        { alias: 'in_2', url: `${server.url}/download?token=secret`, source: 'external' },
      ],
      outputs: noOutputs,
      allow: [server.allowEntry],
    });
    const message = await stepFailure(downloadInputs(spec, dir, signal), ErrorStatus.INVALID_INPUT_FILE_NAME);
    assert.match(message, /^input in_2: the URL http:\/\/127\.0\.0\.1:\d+\/download does not end in a file name/);
    assert.doesNotMatch(message, /secret/);
  });

  test('a missing file fails UNREACHABLE_INPUT_FILE and one over the size limit INPUT_FILE_TOO_LARGE, naming the input', async () => {
    const missing = stepSpec(command, {
      inputs: [
        { alias: 'in_1', url: `${server.url}/media/clip.mp4`, source: 'external' },
        { alias: 'in_2', url: `${server.url}/gone.mp4`, source: 'external' },
      ],
      outputs: noOutputs,
      allow: [server.allowEntry],
    });
    assert.match(
      await stepFailure(downloadInputs(missing, dir, signal), ErrorStatus.UNREACHABLE_INPUT_FILE),
      /^input in_2: .*answered HTTP 404/,
    );

    const tooLarge = { ...missing, inputs: missing.inputs.slice(0, 1), download: { ...missing.download, maxBytes: 4 } };
    assert.match(
      await stepFailure(downloadInputs(tooLarge, dir, signal), ErrorStatus.INPUT_FILE_TOO_LARGE),
      /^input in_1: .*above the limit of 4 bytes/,
    );
  });

  test('downloads the inputs at once: the second arrives whole while the first is still coming', async () => {
    server.stalled.add('/media/slow.mp4');
    const spec = slowToGiveUp(command, {
      inputs: [
        { alias: 'in_1', url: `${server.url}/media/slow.mp4`, source: 'external' },
        { alias: 'in_2', url: `${server.url}/media/clip.mp4`, source: 'external' },
      ],
      outputs: noOutputs,
      allow: [server.allowEntry],
    });
    const cancel = new AbortController();
    const downloading = downloadInputs(spec, dir, cancel.signal);
    const settled = downloading.then(
      () => 'resolved',
      () => 'rejected',
    );
    try {
      // One at a time, in_2 would not be asked for before in_1 gives up (10 minutes).
      for (const deadline = Date.now() + 30_000; !(await exists(join(dir, '.in/in_2/clip.mp4')));) {
        assert.ok(Date.now() < deadline, `in_2 was not downloaded while in_1 was; requests: ${server.requests.join(', ')}`);
        assert.equal(await Promise.race([settled, setTimeout(20, 'waiting')]), 'waiting');
      }
      assert.equal(await readFile(join(dir, '.in/in_2/clip.mp4'), 'utf8'), 'clip bytes');
    } finally {
      cancel.abort(new Error('test over'));
      server.stalled.delete('/media/slow.mp4');
    }
    await assert.rejects(downloading, /test over/);
    assert.deepEqual(await partFiles(dir), [], 'the stopped download leaves nothing');
  });

  test('the first download that fails stops the others and is the one reported; nothing is left behind', { timeout: 60_000 }, async () => {
    server.stalled.add('/media/slow.mp4');
    const spec = slowToGiveUp(command, {
      inputs: [
        { alias: 'in_1', url: `${server.url}/media/slow.mp4`, source: 'external' },
        { alias: 'in_2', url: `${server.url}/gone.mp4`, source: 'external' },
      ],
      outputs: noOutputs,
      allow: [server.allowEntry],
    });
    try {
      // in_2's 404, and in_1 is stopped by it: without that stop, in_1 would wait 10 minutes (the test's timeout fails it).
      const message = await stepFailure(downloadInputs(spec, dir, signal), ErrorStatus.UNREACHABLE_INPUT_FILE);
      assert.match(message, /^input in_2: .*answered HTTP 404/);
    } finally {
      server.stalled.delete('/media/slow.mp4');
    }
    assert.deepEqual(await partFiles(dir), []);
  });
});

/** A step whose downloads wait 10 minutes before they give up on a silent server. */
function slowToGiveUp(...args: Parameters<typeof stepSpec>): ReturnType<typeof stepSpec> {
  const spec = stepSpec(...args);
  return { ...spec, download: { ...spec.download, timeoutSeconds: 600 } };
}

/** Files a download writes before it is complete (download.ts: `.<name>.<uuid>.part`), anywhere under `dir`. */
async function partFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true });
  return entries.filter((entry) => entry.endsWith('.part'));
}

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

describe('extractArchive', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'runner-archive-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  /** Writes `zip` where downloadInputs puts an archive; resolves with its path relative to `dir`. */
  async function placeArchive(zip: Buffer): Promise<string> {
    await mkdir(join(dir, '.in/_archive'), { recursive: true });
    await writeFile(join(dir, '.in/_archive/pack.zip'), zip);
    return '.in/_archive/pack.zip';
  }

  test('extracts into the working folder itself and removes the zip', async () => {
    const archive = await placeArchive(await zipBuffer({ 'logo.txt': 'logo', 'fonts/a.txt': 'font' }));
    await extractArchive(dir, archive, 1_000_000);
    assert.equal(await readFile(join(dir, 'logo.txt'), 'utf8'), 'logo');
    assert.equal(await readFile(join(dir, 'fonts/a.txt'), 'utf8'), 'font');
    assert.deepEqual(await readdir(join(dir, '.in/_archive')), []);
  });

  test('refuses an entry that climbs out of the folder (INVALID_INPUT_ARCHIVE), writes nothing and removes the zip', async () => {
    // yazl will not write a '..' name: the entry is renamed in the zip's bytes (same length, both headers).
    const honest = await zipBuffer({ 'keep.txt': 'fine', 'zz/escape.txt': 'escaped' });
    const archive = await placeArchive(Buffer.from(honest.toString('latin1').replaceAll('zz/escape.txt', '../escape.txt'), 'latin1'));
    const message = await stepFailure(extractArchive(dir, archive, 1_000_000), ErrorStatus.INVALID_INPUT_ARCHIVE);
    assert.match(message, /^input_compressed_folder: /);
    assert.match(message, /\.\.\/escape\.txt/);
    assert.deepEqual((await readdir(dir)).sort(), ['.in']);
    assert.deepEqual(await readdir(join(dir, '.in/_archive')), []);
  });

  test("refuses entries into the runner's own folders (.in, .out)", async () => {
    const archive = await placeArchive(await zipBuffer({ '.out/out_1/out.mp4': 'not made by ffmpeg' }));
    const message = await stepFailure(extractArchive(dir, archive, 1_000_000), ErrorStatus.INVALID_INPUT_ARCHIVE);
    assert.match(message, /reserved folder name "\.out"/);
  });
});
