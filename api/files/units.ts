// Sizes are reported in MB of 10^6 bytes, rounded to the byte.
export const toMb = (bytes: number) => Number((bytes / 1_000_000).toFixed(6));
