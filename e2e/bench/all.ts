// `npm run bench`: every benchmark of the performance table, one after the other, each measuring the
// service as a user starts it next to its baseline in the same run. Each prints its own details; the
// rows it reports (stats.ts reportRow) are gathered into one table at the end. The poll, burst and
// memory rows run on PGlite and then on PostgreSQL (started by scripts/postgres.sh, stopped after).
// Run: npm run bench [-- --quick] [-- --cluster]   (--quick: fewer runs and counts; --cluster: add
// the cluster-mode rows: about 10 more minutes on the test control plane, and about 30 on two real nodes)
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ROW_PREFIX, type BenchRow } from './stats.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const quick = process.argv.includes('--quick');
const withCluster = process.argv.includes('--cluster');
const rows: BenchRow[] = [];

/** Runs one benchmark script, passing its output through and keeping its rows. */
async function bench(script: string, args: (string | number)[], env: Record<string, string> = {}): Promise<void> {
  console.log(`\n## ${script} ${args.join(' ')}${env.FFOP_TEST_DATABASE_URL ? ' (PostgreSQL)' : ''}`);
  const child = spawn(process.execPath, ['--import', 'tsx', `e2e/bench/${script}`, ...args.map(String)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let rest = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString('utf8')).split('\n');
    rest = lines.pop()!;
    for (const line of lines) {
      if (line.startsWith(ROW_PREFIX)) rows.push(JSON.parse(line.slice(ROW_PREFIX.length)) as BenchRow);
      else console.log(line);
    }
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) rows.push({ what: `${script} failed (exit ${code})`, service: '-', baseline: '-', ratio: '-', goal: '-' });
}

const postgresUrl = (await promisify(execFile)('bash', ['scripts/postgres.sh', 'start'], { cwd: ROOT })).stdout.trim();
const pg = { FFOP_TEST_DATABASE_URL: postgresUrl };
const pglite = { FFOP_TEST_DATABASE_URL: '' };
try {
  await bench('submit-to-success.ts', [quick ? 5 : 9], pglite);
  await bench('queued-commands.ts', [quick ? 20 : 100, 'clip', `--rounds=${quick ? 1 : 3}`], pglite);
  await bench('api-load.ts', [quick ? 4 : 8], pglite);
  await bench('api-load.ts', [quick ? 4 : 8], pg);
  await bench('upload-throughput.ts', [quick ? 64 : 200, 16, 3, quick ? 1 : 3]);
  await bench('stored-file-download.ts', [quick ? 3 : 5, 1024]);
  await bench('output-multipart.ts', [quick ? 64 : 256, quick ? 3 : 5]);
  await bench('queued-commands.ts', [quick ? 200 : 1000, 'cheap'], pglite);
  await bench('large-media.ts', [quick ? 2 : 5, '--s3'], pglite);
  await bench('paced-inputs.ts', [quick ? 3 : 5], pglite);
  if (withCluster) await bench('cluster-overhead.ts', quick ? [100, 2000] : [], pg);
  if (withCluster) await bench('kubectl-intake.ts', [quick ? 5 : 15], pg);
  // Queueing on two real nodes (kubelet + containerd, in e2e/node/sandbox.sh; needs root): about 15 more minutes.
  if (withCluster)
    await bench('cluster-queueing.ts', quick ? ['--burst', 40, '--idle', 5, '--backlog', 1000, '--backlog-seconds', 30] : []);
} finally {
  await promisify(execFile)('bash', ['scripts/postgres.sh', 'stop'], { cwd: ROOT });
}

console.log('\n# The performance table (each row against its baseline from the same run)\n');
console.log('| what | service | baseline | ratio | goal |');
console.log('|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.what} | ${r.service} | ${r.baseline} | ${r.ratio} | ${r.goal} |`);
