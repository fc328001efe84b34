// Benchmark: the README example (scale a clip to 640 px wide, H.264/AAC) in embedded mode. Prints,
// per run, the time from submit to SUCCESS as a poller sees it (50 ms polls) next to the command's
// ffmpeg_command_run_seconds; the difference is the service's own overhead (download, probe, store,
// runner start, polling). Run: npx tsx e2e/bench/submit-to-success.ts [runs]
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startMediaServer, startService } from '../harness.ts';

const runs = Number(process.argv[2] ?? 5);
// A 10 s 1280x720 clip stands in for "https://example.com/media/video.mp4".
const media = await startMediaServer((dir) => promisify(execFile)('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=30:duration=10',
  '-f', 'lavfi', '-i', 'sine=frequency=440:duration=10', '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', join(dir, 'video.mp4')]));
const svc = await startService({ allow: [media.allowEntry] });
const api = svc.client();
const rows: { total: number; ffmpeg: number }[] = [];
try {
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const id = await api.submit({
      ffmpeg_command: '-i {{in_1}} -vf scale=640:-2 -c:v libx264 -preset veryfast -c:a aac {{out_1}}',
      input_files: { in_1: `${media.url}/video.mp4` },
      output_files: { out_1: 'video_640.mp4' },
    });
    const { record } = await api.waitForEnd(id, 120_000);
    const total = (performance.now() - t0) / 1000;
    if (record.status !== 'SUCCESS') throw new Error(JSON.stringify(record));
    rows.push({ total, ffmpeg: record.ffmpeg_command_run_seconds });
    console.log(`run ${i + 1}: submit->SUCCESS ${total.toFixed(2)} s, ffmpeg_command_run_seconds ${record.ffmpeg_command_run_seconds.toFixed(2)} s, overhead ${(total - record.ffmpeg_command_run_seconds).toFixed(2)} s`);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`median of ${runs}: submit->SUCCESS ${median(rows.map((r) => r.total)).toFixed(2)} s, ffmpeg ${median(rows.map((r) => r.ffmpeg)).toFixed(2)} s, overhead ${median(rows.map((r) => r.total - r.ffmpeg)).toFixed(2)} s`);
} finally {
  await svc.close();
  await media.close();
}
