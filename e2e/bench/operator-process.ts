// The operator as a process of its own (the compiled dist/operator/main.js, as the image runs it),
// configured like the Helm chart does through FFOP_* settings, against the cluster fixture: its
// ServiceAccount's kubeconfig, the fixture's database and namespace. It only needs to lead, list and
// watch here (the benchmark runs no command through it): its storage is a folder of its own.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClusterService } from '../cluster/service-fixture.ts';
import { SERVICE_PROCESS_ENV } from '../harness.ts';
import { procStatusKiB } from './stats.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface OperatorProcess {
  pid: number;
  /** Resolves when the process logs that it leads (it then lists and watches). */
  leading: Promise<void>;
  /** VmRSS and VmHWM (its peak so far) from /proc, and the V8 heap in use (memory-reporter.mjs), in MB (10^6 bytes). */
  memory(): Promise<{ rssMB: number; peakMB: number; heapUsedMB: number }>;
  stop(): Promise<void>;
}

export async function startOperatorProcess(svc: ClusterService, dir: string): Promise<OperatorProcess> {
  const kubeconfig = join(dir, 'operator.kubeconfig');
  await writeFile(kubeconfig, svc.operatorKubeConfig.exportConfig(), { mode: 0o600 });
  const memoryFile = join(dir, 'memory.json');
  await rm(memoryFile, { force: true });
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', join(ROOT, 'e2e/bench/memory-reporter.mjs'), join(ROOT, 'dist/operator/main.js')],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        ...SERVICE_PROCESS_ENV,
        KUBECONFIG: kubeconfig,
        FFOP_NAMESPACE: svc.cluster.namespace,
        FFOP_DATABASE_URL: svc.databaseUrl,
        FFOP_REPORT_URL: `${svc.apiUrl}/internal/v1/job-events`,
        FFOP_JOB_TOKEN_SECRET: svc.tokenSecret,
        FFOP_DATA_DIR: dir,
        FFOP_STORAGE: 'local',
        FFOP_STORAGE_DIR: join(dir, 'storage'),
        FFOP_SIGNING_KEY: randomBytes(32).toString('hex'),
        FFOP_PUBLIC_URL: svc.apiUrl,
        FFOP_LOG_LEVEL: 'info',
        POD_NAME: `bench-operator-${Date.now()}`,
        FFOP_BENCH_MEMORY_FILE: memoryFile,
      },
    },
  );
  let log = '';
  const leading = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-20_000);
      if (/"msg":"leading"/.test(log)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`the operator exited (${code}) before leading:\n${log}`)));
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return {
    pid: child.pid!,
    leading,
    async memory() {
      const [rss, peak] = await procStatusKiB(child.pid!, 'VmRSS', 'VmHWM');
      // The reporter rewrites the file every 200 ms: a read can catch it empty, then the figure is unknown.
      const heap = await readFile(memoryFile, 'utf8')
        .then((t) => JSON.parse(t) as NodeJS.MemoryUsage)
        .catch(() => null);
      return { rssMB: (rss * 1024) / 1e6, peakMB: (peak * 1024) / 1e6, heapUsedMB: heap ? heap.heapUsed / 1e6 : NaN };
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

/** Samples RSS every 200 ms until it moved less than 1 MB over `quietMs` (at least `minMs`, at most 60 s). */
export async function settledMemory(
  op: OperatorProcess,
  minMs = 10_000,
  quietMs = 5_000,
): Promise<{ rssMB: number; peakMB: number; heapUsedMB: number; afterSeconds: number }> {
  const start = Date.now();
  const samples: { at: number; rss: number }[] = [];
  for (;;) {
    const m = await op.memory();
    const now = Date.now();
    samples.push({ at: now, rss: m.rssMB });
    const recent = samples.filter((s) => s.at >= now - quietMs).map((s) => s.rss);
    const quiet = now - start >= minMs && Math.max(...recent) - Math.min(...recent) < 1;
    if (quiet || now - start > 60_000) return { ...m, afterSeconds: (now - start) / 1000 };
    await new Promise((r) => setTimeout(r, 200));
  }
}
