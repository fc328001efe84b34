// The job-backend contract: what the reconciler relies on, run against every backend (local
// processes in core/engine/local-process-backend.test.ts, Kubernetes Jobs on a real control
// plane in e2e/cluster/kubernetes-backend.test.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { RunnerEvent, StepSpec } from '../../jobs/step-spec.ts';
import type { Storage } from '../../storage/storage.ts';
import { parseFfmpegCommand } from '../../command-line/parse.ts';
import { jobName, type BackendEvent, type JobBackend, type JobRef } from '../job-backend.ts';

export interface BackendFixture {
  backend: JobBackend;
  storage: Storage;
  close(): Promise<void>;
}

export function collector(backend: JobBackend) {
  const events = new Map<string, (RunnerEvent | BackendEvent)[]>();
  const waiters: (() => void)[] = [];
  backend.subscribe((ref: JobRef, event: RunnerEvent | BackendEvent) => {
    events.set(ref.name, [...(events.get(ref.name) ?? []), event]);
    waiters.splice(0).forEach((w) => w());
  });
  const of = (name: string) => events.get(name) ?? [];
  const result = async (name: string, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = of(name).find((e) => e.type === 'result');
      if (r) return r;
      if (Date.now() > deadline) throw new Error(`no result for ${name}; events: ${JSON.stringify(of(name))}`);
      await new Promise<void>((res) => {
        waiters.push(res);
        setTimeout(res, 200);
      });
    }
  };
  return { of, result };
}

export async function spec(
  storage: Storage,
  command: string,
  opts: { timeoutSeconds?: number } = {},
): Promise<{ spec: StepSpec; ref: JobRef }> {
  const commandId = randomUUID();
  const parsed = parseFfmpegCommand(command, { inputAliases: new Set(), outputAliases: new Set(['out_1']) });
  const ref = { name: jobName(commandId, 0, 1), commandId, step: 0, attempt: 1 };
  return {
    ref,
    spec: {
      commandId,
      step: 0,
      command: parsed,
      inputs: [],
      outputs: [
        { alias: 'out_1', fileName: 'o.mp4', kind: 'file', uploadUrl: await storage.presignPut(`public/contract/${commandId}/o.mp4`, 600) },
      ],
      threads: 1,
      timeoutSeconds: opts.timeoutSeconds ?? 60,
      download: { maxBytes: 1e9, timeoutSeconds: 30, allow: [] },
    },
  };
}

export function jobBackendContract(name: string, make: () => Promise<BackendFixture>) {
  describe(`job backend contract: ${name}`, () => {
    let f: BackendFixture;
    let events: ReturnType<typeof collector>;
    before(async () => {
      f = await make();
      events = collector(f.backend);
    });
    after(async () => {
      await f?.close();
    });

    const GOOD = '-f lavfi -i testsrc=size=64x48:rate=10:duration=0.5 -c:v libx264 -preset ultrafast {{out_1}}';

    test('a job runs its step: stages in order, then one successful result; ensureJob twice runs it once', async () => {
      const { spec: s, ref } = await spec(f.storage, GOOD);
      await f.backend.ensureJob({ ref, spec: s, vcpus: 1, deadlineSeconds: 120, accountId: 'acct' });
      await f.backend.ensureJob({ ref, spec: s, vcpus: 1, deadlineSeconds: 120, accountId: 'acct' });
      const result = await events.result(ref.name);
      assert.equal(result.ok, true, JSON.stringify(result));
      const stages = events
        .of(ref.name)
        .filter((e) => e.type === 'stage')
        .map((e) => (e as { stage: string }).stage);
      assert.deepEqual(stages, ['DOWNLOADING', 'PREPARING_INPUT_FILES', 'FFMPEG_PROCESSING', 'UPLOADING']);
      assert.equal(events.of(ref.name).filter((e) => e.type === 'result').length, 1);
      assert.ok((await f.storage.stat(`public/contract/${s.commandId}/o.mp4`))!.size > 0);
      // Finished jobs stay until deleted, so a result is never mistaken for a lost job.
      assert.ok((await f.backend.listJobNames()).has(ref.name));
      await f.backend.deleteJob(ref.name);
      const until = Date.now() + 30_000;
      while ((await f.backend.listJobNames()).has(ref.name) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      assert.ok(!(await f.backend.listJobNames()).has(ref.name));
    });

    test("an ffmpeg failure is a failed result with ffmpeg's words", async () => {
      const { spec: s, ref } = await spec(f.storage, '-f lavfi -i testsrc=duration=0.2 -c:v nosuchcodec {{out_1}}');
      await f.backend.ensureJob({ ref, spec: s, vcpus: 1, deadlineSeconds: 120, accountId: 'acct' });
      const result = await events.result(ref.name);
      assert.equal(result.ok, false);
      assert.equal(!result.ok && result.errorStatus, 'FFMPEG_FAILED');
      await f.backend.deleteJob(ref.name);
    });

    test('a job past its deadline ends with DEADLINE_EXCEEDED', async () => {
      const { spec: s, ref } = await spec(f.storage, '-re -f lavfi -i testsrc=size=32x32:rate=5 -c:v libx264 -preset ultrafast {{out_1}}', {
        timeoutSeconds: 300,
      });
      await f.backend.ensureJob({ ref, spec: s, vcpus: 1, deadlineSeconds: 2, accountId: 'acct' });
      const result = await events.result(ref.name, 90_000);
      assert.equal(!result.ok && result.errorStatus, 'DEADLINE_EXCEEDED', JSON.stringify(result));
      await f.backend.deleteJob(ref.name);
    });

    test('deleting a running job stops it', async () => {
      const { spec: s, ref } = await spec(f.storage, '-re -f lavfi -i testsrc=size=32x32:rate=5 -c:v libx264 -preset ultrafast {{out_1}}', {
        timeoutSeconds: 300,
      });
      await f.backend.ensureJob({ ref, spec: s, vcpus: 1, deadlineSeconds: 300, accountId: 'acct' });
      const until = Date.now() + 60_000;
      while (!events.of(ref.name).some((e) => e.type === 'stage' && e.stage === 'FFMPEG_PROCESSING') && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 100));
      }
      await f.backend.deleteJob(ref.name);
      const gone = Date.now() + 30_000;
      while ((await f.backend.listJobNames()).has(ref.name) && Date.now() < gone) await new Promise((r) => setTimeout(r, 100));
      assert.ok(!(await f.backend.listJobNames()).has(ref.name));
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(await f.storage.stat(`public/contract/${s.commandId}/o.mp4`), null, 'a stopped job stores nothing');
    });
  });
}
