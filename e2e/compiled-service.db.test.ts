// The service as `npm start` runs it: compiled to JavaScript (dist/) and started with plain node, no
// TypeScript loader; its runners are the compiled runner. One command through the HTTP API.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { ApiClient, makeClip, startMediaServer, startServiceProcess, type ServiceProcess, type MediaServer } from './harness.ts';

let media: MediaServer;
let service: ServiceProcess;

/** Command lines (arguments joined by spaces) of the processes whose parent is `parent`. */
async function childCommandLines(parent: number): Promise<string[]> {
  const lines: string[] = [];
  for (const pid of await readdir('/proc').catch(() => [])) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid !== parent) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline) lines.push(cmdline.split('\0').filter(Boolean).join(' '));
  }
  return lines;
}

before(async () => {
  media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4', 1));
  service = await startServiceProcess({ compiled: true, env: { FFOP_ALLOW_ADDRESSES: media.allowEntry } });
});

after(async () => {
  await service?.close();
  await media?.close();
});

test('the compiled service runs a command with the compiled runner, and stops on SIGTERM', async () => {
  const api = new ApiClient(service.url, service.key);
  const id = await api.submit({
    // -re: about a second of real time, long enough to see the runner process.
    ffmpeg_command: '-re -i {{in_1}} -vf scale=80:-2 {{out_1}}',
    input_files: { in_1: `${media.url}/clip.mp4` },
    output_files: { out_1: 'small.mp4' },
  });
  const runners = new Set<string>();
  const ended = api.waitForEnd(id, 60_000);
  let done = false;
  void ended.finally(() => (done = true));
  while (!done) {
    for (const line of await childCommandLines(service.pid)) if (line.includes('runner-image/main')) runners.add(line);
    await new Promise((r) => setTimeout(r, 50));
  }
  const { record } = await ended;
  assert.ok(runners.size > 0, 'a runner was seen');
  // A runner is started as `nice -n 10 node ...`; nice execs node, so a look in between sees nice's line.
  for (const line of runners) assert.match(line, /^(?:\S*nice -n \d+ )?\S*node \S*\/dist\/runner-image\/main\.js$/, line);
  assert.equal(record.status, 'SUCCESS', `${JSON.stringify(record)}\n${service.stderr()}`);
  assert.equal(record.output_files.out_1.width, 80);
});
