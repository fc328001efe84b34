// Benchmarks measure the service, not a plan's limits: the default account moves to a plan whose
// limits do not bind (through the service's admin socket, as an operator would).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { ServiceProcess } from '../harness.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export async function unlimitedPlan(svc: ServiceProcess): Promise<void> {
  const cli = (args: string[]) =>
    promisify(execFile)(process.execPath, ['--import', 'tsx', 'api/cli/cli.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, ...svc.env },
    });
  await cli([
    'plans',
    'create',
    'bench',
    '--max-vcpus',
    '1000000',
    '--max-run-seconds',
    '3600',
    '--requests-per-minute',
    '100000000',
    '--storage-quota-gb',
    '1000000',
    '--processing-quota-gb',
    '1000000',
    '--private-files',
    'no',
  ]);
  await cli(['accounts', 'set-plan', 'default', 'bench']);
}
