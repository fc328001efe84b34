// Part 2 of the cluster benchmark: the operator's resident memory with many FfmpegCommand objects.
// The fixture's operator shares this process, so here the operator runs as a process of its own
// (operator-process.ts) and its VmRSS is read from /proc:
//   idle        leading, lists and watches done, no FfmpegCommand in the namespace;
//   arriving    the highest RSS sampled while `objects` FfmpegCommands are created (each one reaches it
//               as a watch ADDED event, then a MODIFIED one for its status), and RSS once settled;
//   restarted   a fresh process whose initial list returns all of them: settled RSS and its peak (VmHWM).
// The objects are finished commands as the API and the operator leave them: copies of a real one that
// ran here (spec as the API creates it, status SUCCESS as the operator mirrors it, outputs included),
// each with its own name, command id, labels, job name and file id. They have no database rows and no
// Jobs: finished commands are not in the reconciler's working set (it reads QUEUED and PROCESSING
// rows), so what they cost the operator is its watch cache of FfmpegCommands.
import { reportRow } from './stats.ts';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { GROUP, LABELS, PLURAL, VERSION } from '../../core/k8s/names.ts';
import { runProcess } from '../cluster/cluster.ts';
import type { ClusterService } from '../cluster/service-fixture.ts';
import type { FfmpegCommandObject } from '../../core/k8s/ffmpeg-command.ts';
import { CHEAP_COMMAND } from './cluster-in-flight.ts';
import { settledMemory, startOperatorProcess, type OperatorProcess } from './operator-process.ts';

const CONCURRENCY = 32;

export async function benchOperatorMemory(svc: ClusterService, o: { objects: number }): Promise<string[]> {
  const ns = svc.cluster.namespace;
  const crs = svc.cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  const where = { group: GROUP, version: VERSION, namespace: ns, plural: PLURAL };

  const build = await runProcess('bash', ['scripts/build.sh']);
  if (build.code !== 0) throw new Error(`scripts/build.sh failed:\n${build.stdout}${build.stderr}`);

  const template = await finishedCommand(svc, crs, where);
  await svc.operator.stop(); // releases the lease for the process below
  await crs.deleteCollectionNamespacedCustomObject(where);
  for (let i = 0; i < 100 && ((await crs.listNamespacedCustomObject(where)) as { items: unknown[] }).items.length; i++) {
    await new Promise((r) => setTimeout(r, 200));
  }

  const dir = await mkdtemp(join(tmpdir(), 'ffop-bench-operator-'));
  let op: OperatorProcess | undefined;
  try {
    op = await startOperatorProcess(svc, dir);
    await op.leading;
    const idle = await settledMemory(op);

    let arrivingPeak = 0;
    let sampling = true;
    const sampled = op;
    const sampler = (async () => {
      while (sampling) {
        arrivingPeak = Math.max(arrivingPeak, (await sampled.memory()).rssMB);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    sampler.catch(() => {}); // awaited below; this only keeps a failure from being unhandled meanwhile
    const createStart = Date.now();
    await createFinished(crs, where, template, o.objects);
    const createSeconds = (Date.now() - createStart) / 1000;
    sampling = false;
    await sampler;
    const arrived = await settledMemory(op);
    await op.stop();

    op = await startOperatorProcess(svc, dir);
    const restartAt = Date.now();
    await op.leading;
    const restarted = await settledMemory(op);
    const leadSeconds = (Date.now() - restartAt) / 1000 - restarted.afterSeconds;
    await op.stop();

    const bytes = JSON.stringify(template).length;
    const mb = (v: number) => `${v.toFixed(0)} MB`;
    reportRow({
      what: `cluster mode: operator RSS (own process), idle / with ${o.objects} FfmpegCommands (restarted)`,
      service: `${mb(idle.rssMB)} / ${mb(restarted.rssMB)} (peak while created ${mb(arrivingPeak)})`,
      baseline: '-',
      ratio: '-',
      goal: '<= 150 MB',
    });
    return [
      `Operator process (node dist/operator/main.js, ${process.version}; ` +
        `V8 heap from a preloaded e2e/bench/memory-reporter.mjs) VmRSS; ` +
        `${o.objects} finished FfmpegCommands of about ${bytes} bytes of JSON each, ` +
        `created in ${createSeconds.toFixed(0)} s (create + status, ${CONCURRENCY} at a time). ` +
        `"Settled" = RSS moved less than 1 MB over 5 s, at least 10 s after leading.`,
      '',
      `| cluster mode: operator memory (own process) | VmRSS settled | V8 heap used then | peak RSS |`,
      '|---|---|---|---|',
      `| idle: no FfmpegCommand | ${mb(idle.rssMB)} | ${mb(idle.heapUsedMB)} | ${mb(idle.peakMB)} (VmHWM) |`,
      `| while ${o.objects} FfmpegCommands are created (watch events), then settled ` +
        `| ${mb(arrived.rssMB)} | ${mb(arrived.heapUsedMB)} | ${mb(arrivingPeak)} (highest sample) |`,
      `| restarted with ${o.objects} FfmpegCommands (initial list; leading after ${leadSeconds.toFixed(1)} s) ` +
        `| ${mb(restarted.rssMB)} | ${mb(restarted.heapUsedMB)} | ${mb(restarted.peakMB)} (VmHWM) |`,
    ];
  } finally {
    await op?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

type Where = { group: string; version: string; namespace: string; plural: string };

/** A finished FfmpegCommand as it really is: one left by part 1, else one run now. */
async function finishedCommand(svc: ClusterService, crs: CustomObjectsApi, where: Where): Promise<FfmpegCommandObject> {
  const done = (list: { items: FfmpegCommandObject[] }) => list.items.find((c) => c.status?.phase === 'SUCCESS');
  const found = done((await crs.listNamespacedCustomObject(where)) as { items: FfmpegCommandObject[] });
  if (found) return found;
  const api = svc.client();
  const id = await api.submit(CHEAP_COMMAND);
  await api.waitForEnd(id);
  for (let i = 0; i < 50; i++) {
    const obj = (await crs.getNamespacedCustomObject({ ...where, name: id })) as FfmpegCommandObject;
    if (obj.status?.phase === 'SUCCESS') return obj;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the FfmpegCommand ${id} never showed SUCCESS`);
}

async function createFinished(crs: CustomObjectsApi, where: Where, template: FfmpegCommandObject, count: number): Promise<void> {
  const oldId = template.metadata!.name!;
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const id = randomUUID();
      // The template's own id, wherever it appears (labels, spec, status.jobNames), becomes the new one.
      const copy = JSON.parse(
        JSON.stringify({ spec: template.spec, status: template.status }).replaceAll(oldId, id),
      ) as FfmpegCommandObject;
      for (const out of (copy.status?.outputs as { fileId: string }[] | undefined) ?? []) out.fileId = randomUUID();
      const labels = { ...template.metadata!.labels, [LABELS.commandId]: id };
      await crs.createNamespacedCustomObject({
        ...where,
        body: {
          apiVersion: template.apiVersion,
          kind: template.kind,
          metadata: { name: id, namespace: where.namespace, labels },
          spec: copy.spec,
        },
      });
      await crs.patchNamespacedCustomObjectStatus(
        { ...where, name: id, body: { status: copy.status } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}
