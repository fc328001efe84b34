// Attack: while another account's command runs, read its output through /proc/<pid>/cwd or its
// working folder's path, or have ffmpeg's HLS muxer delete it (append_list + delete_segments with a
// planted playlist naming the victim's files). Each ffmpeg has its own PID namespace, /proc, folder and
// uid, so none of these names reach the victim; the victim's command must finish untouched.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { probeJson, startMediaServer, startService, type ApiClient, type MediaServer, type ServiceFixture } from '../harness.ts';
import { assertReadNothing, hlsPlaylist, outcome, probeUnconfined, makeCanaries, writeZip, type Canaries } from './security-fixture.ts';

/** The victim's output: a size and length nothing else in the test has. */
// Long enough that both attacks end while it still writes, on a loaded machine too (8 s was not).
const VICTIM = { width: 208, height: 160, seconds: 20 };
const VICTIM_SOURCE = `testsrc=size=${VICTIM.width}x${VICTIM.height}:rate=25:duration=${VICTIM.seconds}`;
const VICTIM_OUTPUT = '.out/out_1/victim.ts'; // where the runner puts out_1, relative to the working folder

/** The host pid of the running ffmpeg whose arguments include `marker`. */
// (A runner starts in well under a second on a quiet machine; a busy one takes tens of seconds.)
async function findFfmpegPid(marker: string, timeoutMs = 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const entry of await readdir('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const argv: string[] = await readFile(`/proc/${entry}/cmdline`, 'utf8').then(
        (s) => s.split('\0'),
        () => [],
      );
      if (basename(argv[0] ?? '') === 'ffmpeg' && argv.includes(marker)) return Number(entry);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no ffmpeg running with ${marker}`);
}

async function waitForSize(path: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (
    (await stat(path).then(
      (s) => s.size,
      () => 0,
    )) === 0
  ) {
    if (Date.now() > deadline) throw new Error(`${path} stays empty`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("security: a running command cannot read or delete another account's files", () => {
  let canaries: Canaries;
  let media: MediaServer;
  let svc: ServiceFixture;
  let attacker: ApiClient;
  let victim: ApiClient;

  before(async () => {
    canaries = await makeCanaries();
    media = await startMediaServer(async () => {});
    // Room for the victim and two attackers at once (1 vCPU each) on a 2-core machine.
    svc = await startService({ allow: [media.allowEntry], env: { FFOP_LOCAL_MAX_VCPUS: '4' } });
    attacker = svc.client(await svc.newAccount('pro'));
    victim = svc.client(await svc.newAccount('pro'));
  });
  after(async () => {
    await svc?.close();
    await media?.close();
    await canaries?.close();
  });

  test("attack: /proc/<pid>/cwd, /proc/self/../<n>/cwd and the victim's folder path; append_list+delete_segments", async (t) => {
    const victimId = await victim.submit({
      ffmpeg_command: `-re -f lavfi -i ${VICTIM_SOURCE} -c:v mpeg2video -q 1 -g 1 {{out_1}}`,
      output_files: { out_1: 'victim.ts' },
      max_command_run_seconds: 60,
      vcpu_count: 1,
    });
    const pid = await findFfmpegPid(VICTIM_SOURCE);
    const steps = (await readdir(join(svc.dataDir, 'work'))).filter((n) => n.startsWith('step-'));
    assert.equal(steps.length, 1, 'only the victim runs yet');
    const stepDir = join(svc.dataDir, 'work', steps[0]);
    await waitForSize(join(stepDir, VICTIM_OUTPUT));

    // Every name an attacker could guess for the victim's output: low pids (the sandbox's own
    // namespace), the victim's real pid and its neighbours, through /proc/self/.., and the folder itself.
    const pids = [...Array.from({ length: 12 }, (_, i) => i + 1), ...Array.from({ length: 7 }, (_, i) => pid - 3 + i)];
    const names = [
      ...pids.map((n) => `/proc/${n}/cwd/${VICTIM_OUTPUT}`),
      ...pids.map((n) => `/proc/self/../${n}/cwd/${VICTIM_OUTPUT}`),
      join(stepDir, VICTIM_OUTPUT),
      `../${basename(stepDir)}/${VICTIM_OUTPUT}`,
    ];
    const playlist = hlsPlaylist(names);
    // Control: the same playlist, probed unconfined by the test, reads the victim's output.
    const control = await probeUnconfined({ 'playlist.m3u8': playlist }, 'playlist.m3u8');
    assert.equal(control?.streams?.[0]?.width, VICTIM.width, 'without the sandbox the playlist reads the victim output');

    await writeZip(join(media.dir, 'read.zip'), { 'playlist.m3u8': playlist });
    // A planted output playlist: with append_list the HLS muxer adopts its entries as its own old
    // segments, and delete_segments removes them as they leave the list.
    await writeZip(join(media.dir, 'delete.zip'), {
      'live.m3u8': hlsPlaylist([
        join(stepDir, VICTIM_OUTPUT),
        `/proc/${pid}/cwd/${VICTIM_OUTPUT}`,
        `../${basename(stepDir)}/${VICTIM_OUTPUT}`,
      ]),
    });
    const readId = await attacker.submit({
      ffmpeg_command: '-i playlist.m3u8 -c copy {{out_stolen}}',
      input_compressed_folder: `${media.url}/read.zip`,
      output_files: { out_stolen: 'stolen.mkv' },
      vcpu_count: 1,
    });
    const deleteId = await attacker.submit({
      ffmpeg_command:
        '-f lavfi -i testsrc=size=32x24:rate=10:duration=3 -c:v libx264 -preset ultrafast -g 10 ' +
        '-f hls -hls_time 1 -hls_list_size 1 -hls_flags append_list+delete_segments live.m3u8',
      input_compressed_folder: `${media.url}/delete.zip`,
      output_files: 'OUTPUT_FOLDER',
      vcpu_count: 1,
    });
    const read = (await attacker.waitForEnd(readId)).record;
    const del = (await attacker.waitForEnd(deleteId)).record;
    t.diagnostic(`read: ${outcome(read)}`);
    t.diagnostic(`delete: ${outcome(del)}`);
    // Both attacks ran while the victim's ffmpeg was still writing.
    assert.equal(
      (await victim.get(`/v1/commands/${victimId}`)).body.status,
      'PROCESSING',
      'the victim finished before the attacks: they prove nothing',
    );

    await assertReadNothing(read, canaries, 'read attack', VICTIM);
    if (read.status === 'FAILED') assert.match(read.error_message, /Failed to open segment|Error when loading first segment/);
    await assertReadNothing(del, canaries, 'delete attack', VICTIM);

    const { record } = await victim.waitForEnd(victimId, 90_000);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    const out = record.output_files.out_1;
    assert.deepEqual([out.width, out.height], [VICTIM.width, VICTIM.height]);
    assert.ok(Math.abs(out.duration - VICTIM.seconds) < 0.3, `victim output lasts ${out.duration} s`);
    const probed = await probeJson(out.storage_url);
    assert.ok(Math.abs(Number(probed.format.duration) - VICTIM.seconds) < 0.3, `stored victim output lasts ${probed.format.duration} s`);
    await canaries.assertUntouched();
  });
});
