// The OpenAPI document states every rule the service enforces. Schemathesis (pinned, scripts/schemathesis.sh)
// generates requests from /openapi.json and checks the answers: no 5xx; statuses, content types and
// bodies as documented; a request the document allows is not refused with a 4xx; a method the document
// does not list for a path gets 405 with Allow, and OPTIONS an Allow of exactly the documented methods.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { PlansRepo } from '../core/accounts/plans-repo.ts';
import { startService } from './harness.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// Fixed, so a run is the same run every time: about 4 minutes on 2 quiet cores (PGlite).
const SEED = '20261123';
const MAX_EXAMPLES = '150';
// A bound for a hung run, not a timing check: 21 operations took 5.6 min on a busy 2-core machine.
const DEADLINE_MS = 15 * 60_000;

// Positive data acceptance, except where the document gives a rule in prose because JSON Schema cannot
// state it: the command line (its own language, and the outputs it must write), complete-upload's
// parts, which must be the upload's own parts, and an Idempotency-Key used before with another request.
// Every other 422 of a request the document allows fails.
const HOOKS = `
import schemathesis
from schemathesis.specs.openapi.checks import positive_data_acceptance


def unwritten_output(loc, text):
    return loc == ['body', 'output_files'] and 'not written by the command' in text


def in_prose(path, loc, text):
    # An Idempotency-Key sent again with another body (the document says so in the header's description).
    if loc == ['header', 'Idempotency-Key'] and 'different request' in text:
        return True
    if path == '/v1/run-ffmpeg-command':
        return loc == ['body', 'ffmpeg_command'] or unwritten_output(loc, text)
    if path == '/v1/run-chained-ffmpeg-commands':
        return (len(loc) == 3 and loc[:2] == ['body', 'ffmpeg_commands']) or unwritten_output(loc, text)
    if path == '/v1/files/{file_id}/complete-upload':
        return loc == ['body', 'parts']
    return False


def stated_in_prose(case, response):
    if response.status_code != 422:
        return False
    try:
        detail = response.json()['detail']
    except Exception:
        return False
    if not isinstance(detail, list) or not detail:
        return False
    path = case.operation.path
    return all(i.get('type') == 'value_error' and in_prose(path, i.get('loc'), i.get('msg', '')) for i in detail)


@schemathesis.check
def positive_data_acceptance_beyond_prose(ctx, response, case):
    if stated_in_prose(case, response):
        return None
    return positive_data_acceptance(ctx, response, case)
`;

const CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_schema_conformance',
  'positive_data_acceptance_beyond_prose',
  'unsupported_method',
  'allow_header_conformance',
];

type Outcome = { code: number | null; output: string };
function runSchemathesis(st: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(st, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), DEADLINE_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

test('schemathesis: every request the OpenAPI document allows is accepted, every answer is documented', async () => {
  const st = (await promisify(execFile)('bash', ['scripts/schemathesis.sh'], { cwd: ROOT })).stdout.trim();
  // Event streams of the commands it submits (which stay QUEUED) end within its request timeout.
  const svc = await startService({ env: { FFOP_EVENT_STREAM_LIFETIME_SECONDS: '0.2' } });
  const work = await mkdtemp(join(tmpdir(), 'ffop-schemathesis-'));
  try {
    // Nothing it submits runs: commands stay QUEUED and stored files are not fetched, so no ffmpeg runs
    // and nothing leaves 127.0.0.1 (its URLs name made-up hosts).
    await svc.service.reconciler.stop();
    await svc.service.fileTasks.stop();
    // schemathesis sets webhooks to made-up hosts: no delivery may look them up.
    await svc.service.webhookWorker.stop();
    // A plan whose rate limit never binds: thousands of requests in a minute are the point.
    await new PlansRepo(svc.service.database.db).create({
      name: 'conformance',
      maxVcpus: 4,
      maxCommandRunSeconds: 3600,
      requestsPerMinute: 1_000_000,
      storageQuotaBytes: 1e12,
      processingQuotaBytesPerMonth: 1e12,
      privateFiles: true,
    });
    const key = await svc.newAccount('conformance');
    await writeFile(join(work, 'hooks.py'), HOOKS);
    const args = [
      'run',
      `${svc.url}/openapi.json`,
      '--header',
      `X-API-KEY: ${key}`,
      '--checks',
      CHECKS.join(','),
      '--seed',
      SEED,
      '--max-examples',
      MAX_EXAMPLES,
      // One worker: the run stays the same run (with two, CPython 3.11's ast module once failed across threads).
      '--workers',
      '1',
      '--generation-database',
      'none',
      '--request-timeout',
      '30',
      '--no-color',
    ];
    // Its own folder (it writes .hypothesis and replay files there), no proxy: only 127.0.0.1 is asked.
    const env = { PATH: process.env.PATH, HOME: work, PYTHONUTF8: '1', SCHEMATHESIS_HOOKS: join(work, 'hooks.py') };
    const { code, output } = await runSchemathesis(st, args, work, env);
    const report = output.includes('FAILURES') ? output.slice(output.indexOf('FAILURES')) : output.slice(-6000);
    const ended = code === null ? `was stopped after ${DEADLINE_MS / 60_000} min` : `failed (exit ${code})`;
    assert.equal(code, 0, `schemathesis ${ended}:\n${report}`);
    assert.match(output, /generated, \d+ passed/, output.slice(-3000));
  } finally {
    await svc.close();
    await rm(work, { recursive: true, force: true });
  }
});
