// Logs are JSON lines, and every line about a command carries its command_id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startService } from './harness.ts';

test('JSON log lines with command_id on every line about a command', async () => {
  const lines: string[] = [];
  const svc = await startService({ logLines: lines });
  try {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command: '-f lavfi -i color=s=32x32:d=0.1 -frames:v 1 {{out_1}}',
      output_files: { out_1: 'a.png' },
    });
    await api.waitForEnd(id);
    const bad = await api.submit({
      ffmpeg_command: '-f lavfi -i color=s=32x32:d=0.1 -c:v nope {{out_1}}',
      output_files: { out_1: 'a.mp4' },
    });
    await api.waitForEnd(bad);
  } finally {
    await svc.close();
  }
  const events = lines.map((l) => JSON.parse(l));
  const about = (msg: string) => events.filter((e) => e.msg === msg);
  for (const msg of ['command admitted', 'stage', 'command succeeded', 'command failed']) {
    assert.ok(about(msg).length > 0, `no "${msg}" line`);
    for (const e of about(msg)) assert.match(e.command_id, /^[0-9a-f-]{36}$/, JSON.stringify(e));
  }
  assert.ok(events.every((e) => typeof e.time === 'string' && typeof e.level === 'number'));
});
