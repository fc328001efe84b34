// The runner as a pod runs it: not root (the Job's runAsUser 10001), so bubblewrap has to work in a
// user namespace, and the confinement 'bwrap' makes the runner refuse to run ffmpeg any other
// way. The step downloads a clip from a loopback server, scales it confined, probes and PUTs it.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFfmpegCommand } from '../core/command-line/parse.ts';
import { isRoot } from '../core/confine/set-up.ts';
import type { RunnerEvent, StepSpec } from '../core/jobs/step-spec.ts';
import { runnerEnv, runnerNodeArgs } from '../core/jobs/runner-contract.ts';
import { makeClip, startMediaServer, type MediaServer } from '../e2e/harness.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const POD_UID = 10001;

describe("the runner as a pod's non-root user", { skip: !isRoot() && 'needs root to switch to the pod user' }, () => {
  let media: MediaServer;
  let sink: Server;
  let sinkUrl: string;
  const uploads = new Map<string, number>();
  let workRoot: string;

  before(async () => {
    media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4', 1));
    sink = createServer((req, res) => {
      let bytes = 0;
      req.on('data', (c: Buffer) => (bytes += c.length));
      req.on('end', () => {
        uploads.set(req.url ?? '', bytes);
        res.end();
      });
    });
    await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
    sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
    workRoot = await mkdtemp(join(tmpdir(), 'pod-work-'));
    await chown(workRoot, POD_UID, POD_UID);
  });

  after(async () => {
    await media?.close();
    await new Promise((r) => sink?.close(r));
    await rm(workRoot, { recursive: true, force: true });
  });

  test('confines ffmpeg with bubblewrap in a user namespace and completes the step', { timeout: 120_000 }, async () => {
    const spec: StepSpec = {
      commandId: 'pod-user-test',
      step: 0,
      command: parseFfmpegCommand('-i {{in_1}} -vf scale=64:-2 -an {{out_1}}', {
        inputAliases: new Set(['in_1']),
        outputAliases: new Set(['out_1']),
      }),
      inputs: [{ alias: 'in_1', url: `${media.url}/clip.mp4`, source: 'external' }],
      outputs: [{ alias: 'out_1', fileName: 'small.mp4', kind: 'file', uploadUrl: `${sinkUrl}/out_1` }],
      threads: 1,
      timeoutSeconds: 60,
      download: { maxBytes: 100_000_000, timeoutSeconds: 30, allow: [media.allowEntry] },
    };
    const runner = spawn(
      'setpriv',
      [`--reuid=${POD_UID}`, `--regid=${POD_UID}`, '--clear-groups', '--', process.execPath, ...runnerNodeArgs()],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          TMPDIR: workRoot,
          ...runnerEnv({ workRoot, confinement: 'bwrap', reportToken: 'job-token-that-ffmpeg-must-not-see' }),
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    runner.stdin.end(JSON.stringify(spec));
    let stdout = '';
    let stderr = '';
    runner.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    runner.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    await new Promise((r) => runner.once('close', r));
    const events = stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as RunnerEvent);
    const result = events.find((e) => e.type === 'result');
    assert.ok(result && result.ok, `${JSON.stringify(result)}\n${stderr}`);
    assert.equal(result.outputs[0].media.width, 64);
    assert.ok(uploads.get('/out_1')! > 0);
    assert.doesNotMatch(stderr, /the pod is the boundary/);
  });
});
