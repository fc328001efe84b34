// The HTTP latency histogram, counted in plain arrays. prom-client's Histogram validates and hashes the
// labels of every observation, even through a labels() child: about 5% of a poll's time under load.
// It answers a prom-client Registry as prom-client's own metrics do (name, help, type, get(), reset()),
// and the text /metrics serves is the same, line for line (http-latency-histogram.test.ts compares them).
import type { Histogram, Registry } from 'prom-client';

/** The methods HTTP latency is labelled with; anything else counts as "other" (bounded label values). */
const KNOWN_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'other'] as const;
const OTHER = KNOWN_METHODS.length - 1;

interface Series {
  labels: { method: string; route: string; status: number };
  /** Observations per bucket (not cumulative); the last one is above every bound. */
  counts: number[];
  sum: number;
  count: number;
}

type Label = 'method' | 'route' | 'status';

export class HttpLatencyHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly upperBounds: readonly number[];
  /** By route pattern, then by status * 8 + method: no string is built per observation. */
  private series = new Map<string, Map<number, Series>>();
  /** The same series in the order they were first seen, the order prom-client prints them in. */
  private seriesInOrder: Series[] = [];

  /** buckets: upper bounds in increasing order. */
  constructor(o: { name: string; help: string; buckets: readonly number[]; registry: Registry }) {
    this.name = o.name;
    this.help = o.help;
    this.upperBounds = o.buckets;
    // The registry reads only the members above; its type names prom-client's own classes.
    o.registry.registerMetric(this as unknown as Histogram<Label>);
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    let methodIndex = KNOWN_METHODS.indexOf(method as (typeof KNOWN_METHODS)[number]);
    if (methodIndex === -1) methodIndex = OTHER;
    let byStatus = this.series.get(route);
    if (byStatus === undefined) this.series.set(route, (byStatus = new Map<number, Series>()));
    const key = status * 8 + methodIndex;
    let s = byStatus.get(key);
    if (s === undefined) {
      s = {
        labels: { method: KNOWN_METHODS[methodIndex], route, status },
        counts: new Array<number>(this.upperBounds.length + 1).fill(0),
        sum: 0,
        count: 0,
      };
      byStatus.set(key, s);
      this.seriesInOrder.push(s);
    }
    let bucket = 0;
    while (bucket < this.upperBounds.length && seconds > this.upperBounds[bucket]) bucket++;
    s.counts[bucket] += 1;
    s.sum += seconds;
    s.count += 1;
  }

  /** What a prom-client histogram's get() gives: cumulative buckets, +Inf, sum and count per series. */
  async get() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const s of this.seriesInOrder) {
      let cumulative = 0;
      for (let i = 0; i < this.upperBounds.length; i++) {
        cumulative += s.counts[i];
        values.push({ labels: { le: this.upperBounds[i], ...s.labels }, value: cumulative, metricName: `${this.name}_bucket` });
      }
      values.push({ labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: `${this.name}_bucket` });
      values.push({ labels: { ...s.labels }, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...s.labels }, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.series = new Map();
    this.seriesInOrder = [];
  }
}
