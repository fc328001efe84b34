// Part sizes of direct uploads, as the spec states them: a requested size below 5 MiB is raised to
// 5 MiB; above 5 GiB, or too small to fit the file in 10,000 parts, it is clamped.
export const MIN_PART_BYTES = 5 * 1024 * 1024;
export const MAX_PART_BYTES = 5 * 1024 * 1024 * 1024;
export const MAX_PARTS = 10_000;
export const DEFAULT_PART_BYTES = 16 * 1024 * 1024;

export function choosePartSize(sizeBytes: number, requested?: number): number {
  const fitsInMaxParts = Math.ceil(sizeBytes / MAX_PARTS);
  const wanted = requested ?? DEFAULT_PART_BYTES;
  return Math.min(MAX_PART_BYTES, Math.max(wanted, MIN_PART_BYTES, fitsInMaxParts));
}

/** Number of parts: every part is partSize bytes but the last, which is the remainder (an empty file has one empty part). */
export function partCount(sizeBytes: number, partSize: number): number {
  return Math.max(1, Math.ceil(sizeBytes / partSize));
}
