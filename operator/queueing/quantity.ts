// Kubernetes resource quantities ("2", "1500m", "512Mi", "1e9", "100G") as plain numbers: cores for
// CPU, bytes for memory and disk. Only what node status and our own requests use.
const SUFFIXES: Record<string, number> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;

/** The quantity's value, or null when it is not one. */
export function parseQuantity(text: string | undefined): number | null {
  if (text === undefined) return null;
  const m = QUANTITY.exec(text.trim());
  if (!m) return null;
  // "1e3" is an exponent, "1E" exa: the exponent needs digits after the E.
  return Number(m[1]) * SUFFIXES[m[2] ?? ''];
}

/** Bytes as a short figure for messages: "23.4 GiB". */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : Number(value.toFixed(1))} ${units[unit]}`;
}

/** Bytes as a Kubernetes quantity, rounded up to whole MiB (pod specs read better that way). */
export function bytesQuantity(bytes: number): string {
  return `${Math.ceil(bytes / 2 ** 20)}Mi`;
}
