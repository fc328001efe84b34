// Benchmark: what one failed API key attempt costs the failed-key limit (api/middleware/auth-failure-limit.ts)
// when it already holds 100,000 live client windows (its bound), against the same with almost none.
// Each failure comes from an address not seen before, the case where the limit must make room.
// Prints the median cost per failure of several rounds, in microseconds.
// Run: npm run bench:auth [-- windows failures-per-round]
import { performance } from 'node:perf_hooks';
import { AuthFailureLimit } from '../../api/middleware/auth-failure-limit.ts';
import { median } from './stats.ts';

const windows = Number(process.argv[2] ?? 100_000);
const perRound = Number(process.argv[3] ?? 2_000);
const rounds = 7;
// A global budget far above what the benchmark sends: it measures the per-address bookkeeping.
const options = { maxFailures: 30, windowSeconds: 60, maxTracked: windows, globalMaxFailures: 1e9 };

/** An IPv4 address per number (10.x.y.z), so each is a client of its own. */
const address = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

/** Microseconds per failure from a new address, once `live` windows are held (all within their window). */
function costPerFailure(live: number): number {
  const limit = new AuthFailureLimit(options);
  const now = 1_000_000;
  for (let i = 0; i < live; i++) limit.failed(address(i), now);
  const samples: number[] = [];
  let next = live;
  for (let r = 0; r < rounds; r++) {
    const started = performance.now();
    for (let i = 0; i < perRound; i++) limit.failed(address(next++), now + 1);
    samples.push(((performance.now() - started) * 1000) / perRound);
  }
  return median(samples);
}

costPerFailure(1_000); // warm the JIT
const empty = costPerFailure(10);
const full = costPerFailure(windows);
console.log(`failed-key limit, cost of one failure from a new address (median of ${rounds} rounds of ${perRound}):`);
console.log(`  with 10 live windows:       ${empty.toFixed(2)} µs`);
console.log(`  with ${windows.toLocaleString('en')} live windows: ${full.toFixed(2)} µs (${(full / empty).toFixed(1)}x)`);
