// Attack: exhaust the machine's memory with small inputs that decode to huge pictures (decompression
// bombs) and with a lavfi source of a huge size. The service runs with a 768 MiB address-space limit
// per ffmpeg/ffprobe run; each attack must end as a failure of that one command, and the service
// must keep answering.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startMediaServer, startService, type ApiClient, type MediaServer, type ServiceFixture } from '../harness.ts';
import { outcome, runCommand, waitForFile } from './security-fixture.ts';

const run = promisify(execFile);
const MiB = 1024 * 1024;

async function png(path: string, source: string): Promise<void> {
  await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', source, '-frames:v', '1', path]);
}

describe('security: memory bombs fail their own command only', () => {
  let media: MediaServer;
  let svc: ServiceFixture;
  let attacker: ApiClient;
  let victim: ApiClient;

  before(async () => {
    media = await startMediaServer((dir) =>
      Promise.all([
        png(join(dir, 'small.png'), 'color=c=black:s=320x240'),
        // 144 megapixels: past the service's -max_pixels (64 megapixels), so the decoder refuses it.
        png(join(dir, 'bomb.png'), 'color=c=black:s=12000x12000'),
        // Within -max_pixels, but 16-bit RGBA: 512 MiB for the one decoded picture, past the memory limit with ffmpeg's own.
        png(join(dir, 'deep-bomb.png'), 'color=c=black:s=8192x8192,format=rgba64be'),
      ]),
    );
    svc = await startService({ allow: [media.allowEntry], env: { FFOP_MAX_MEMORY_BYTES: String(768 * MiB) } });
    attacker = svc.client(await svc.newAccount('pro'));
    victim = svc.client(await svc.newAccount('pro'));
  });
  after(async () => {
    await svc?.close();
    await media?.close();
  });

  async function assertServiceAnswers(): Promise<void> {
    assert.equal((await fetch(`${svc.url}/healthz`)).status, 200);
    assert.equal((await attacker.get('/v1/commands?limit=1')).status, 200);
  }

  const scaleDown = (file: string) => ({
    ffmpeg_command: '-i {{in_1}} -vf scale=100:100 {{out_1}}',
    input_files: { in_1: `${media.url}/${file}` },
    output_files: { out_1: 'thumb.png' },
  });

  test('control: the bombs are small files, and the same command on a normal picture succeeds', async () => {
    assert.ok((await stat(join(media.dir, 'bomb.png'))).size < 1 * MiB);
    assert.ok((await stat(join(media.dir, 'deep-bomb.png'))).size < 1 * MiB);
    const record = await runCommand(attacker, scaleDown('small.png'));
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    assert.deepEqual([record.output_files.out_1.width, record.output_files.out_1.height], [100, 100]);
  });

  test('attack: a 12000x12000 PNG bomb as an input fails with FFMPEG_FAILED', async (t) => {
    const record = await runCommand(attacker, scaleDown('bomb.png'));
    t.diagnostic(outcome(record));
    assert.equal(record.status, 'FAILED', JSON.stringify(record));
    assert.equal(record.error_status, 'FFMPEG_FAILED');
    // Stopped by -max_pixels before any allocation; the memory limit is the backstop.
    assert.match(record.error_message, /exceeds specified max pixel count|ran out of memory/);
    await assertServiceAnswers();
  });

  test('attack: an 8192x8192 16-bit PNG bomb (within -max_pixels) runs out of the memory limit: FFMPEG_FAILED', async (t) => {
    const record = await runCommand(attacker, scaleDown('deep-bomb.png'));
    t.diagnostic(outcome(record));
    assert.equal(record.status, 'FAILED', JSON.stringify(record));
    assert.equal(record.error_status, 'FFMPEG_FAILED');
    assert.match(record.error_message, /ffmpeg ran out of memory \(each run may use at most 768 MiB\)/);
    await assertServiceAnswers();
  });

  test('attack: store-file of the bombs ends STORED or FAILED, and the service keeps answering', async (t) => {
    for (const name of ['bomb.png', 'deep-bomb.png']) {
      const file = await waitForFile(
        attacker,
        (await attacker.post('/v1/files/store-file', { file_url: `${media.url}/${name}` })).body.file_id,
      );
      t.diagnostic(`${name}: ${file.status} ${file.error_status ?? ''} ${file.file_type} ${file.width}x${file.height}`);
      assert.ok(file.status === 'STORED' || file.status === 'FAILED', JSON.stringify(file));
    }
    await assertServiceAnswers();
  });

  test('attack: a 16000x16000 lavfi source ends FAILED within its time limit, and the service keeps answering', async (t) => {
    const started = Date.now();
    const record = await runCommand(attacker, {
      ffmpeg_command: '-f lavfi -i testsrc=s=16000x16000 -frames:v 1 {{out_1}}',
      output_files: { out_1: 'huge.png' },
      max_command_run_seconds: 5,
    });
    t.diagnostic(`${outcome(record)} after ${Date.now() - started} ms`);
    assert.equal(record.status, 'FAILED', JSON.stringify(record));
    assert.ok(['FFMPEG_TIMEOUT', 'FFMPEG_FAILED'].includes(record.error_status), JSON.stringify(record));
    await assertServiceAnswers();
  });

  test('attack: a filter upscaling to 16000x16000 (no decoder, so -max_pixels does not apply) runs out of the memory limit', async (t) => {
    const record = await runCommand(attacker, {
      ffmpeg_command: '-f lavfi -i testsrc=s=320x240:d=1 -vf scale=16000:16000 -frames:v 1 {{out_1}}',
      output_files: { out_1: 'huge.png' },
      max_command_run_seconds: 5,
    });
    t.diagnostic(outcome(record));
    assert.equal(record.status, 'FAILED', JSON.stringify(record));
    assert.equal(record.error_status, 'FFMPEG_FAILED');
    assert.match(record.error_message, /ffmpeg ran out of memory \(each run may use at most 768 MiB\)/);
    await assertServiceAnswers();
  });

  test("after the attacks another account's command still runs normally", async () => {
    const record = await runCommand(victim, scaleDown('small.png'));
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    assert.equal(record.output_files.out_1.width, 100);
  });
});
