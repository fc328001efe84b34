// Figures the benchmarks print.

/** The value below which a fraction `q` of the values lie (nearest rank). */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

export const median = (values: number[]): number => quantile(values, 0.5);
