// Preloaded (node --import) into the operator process the cluster benchmark starts: writes its
// process.memoryUsage() to $FFOP_BENCH_MEMORY_FILE every 200 ms, so the benchmark can print the V8
// heap next to VmRSS. Plain JavaScript, so that the process under test loads no TypeScript loader.
// Written aside and renamed, so a reader never sees half a file.
import { renameSync, writeFileSync } from 'node:fs';

const file = process.env.FFOP_BENCH_MEMORY_FILE;
if (file) {
  setInterval(() => {
    writeFileSync(`${file}.tmp`, JSON.stringify(process.memoryUsage()));
    renameSync(`${file}.tmp`, file);
  }, 200).unref();
}
