// Built-in queueing (queueing.mode builtin): the operator releases queued steps (makes their Jobs)
// only as fast as the cluster shows room for their pods. There is no capacity number to configure:
// the scheduler's own answers are read. A released step whose pod is bound to a node is placed; one
// whose pod waits is pending. The gate
//   - lets at most maxPendingPods steps wait for a node at once (so an autoscaler still sees demand);
//   - shuts while a pending pod has been Unschedulable for holdMs (the cluster is full);
//   - sends a step whose pod stays Unschedulable for requeueAfterMs back to the queue: its Job is
//     deleted, so its deadline (which runs from the Job's start, Pending time included) stops;
//   - while shut, releases one step per placed pod that ended (its room is free, unless a pending pod
//     takes it: those count first), and opens again when a node came or changed, or after retryMs
//     (room freed by pods that are not ours is seen no other way).
import type { ReleaseGate } from '../../core/engine/job-backend.ts';

/** A released step as the gate sees it (from the Job and pod watches). */
export interface ReleasedStep {
  jobName: string;
  /** Its pod is bound to a node, or has ended: it waits for no room. */
  placed: boolean;
  /** The scheduler's words while it marks the pod Unschedulable, else null. */
  unschedulable: string | null;
}

export interface ReleaseGateOptions {
  maxPendingPods: number;
  maxVcpus: number | null;
  holdMs?: number;
  requeueAfterMs?: number;
  retryMs?: number;
  clock?: () => number;
  /** Released steps: Jobs not finished, with what their pods say. */
  released: () => ReleasedStep[];
  /** Sends a pending step back to the queue, with the reason to tell its user. */
  requeue: (jobName: string, reason: string) => void;
}

export const DEFAULT_HOLD_MS = 2_000;
export const DEFAULT_REQUEUE_AFTER_MS = 10_000;
export const DEFAULT_RETRY_MS = 30_000;

export class PodRoomGate implements ReleaseGate {
  readonly maxVcpus: number | null;
  private readonly o: ReleaseGateOptions;
  private readonly clock: () => number;
  private readonly listeners: (() => void)[] = [];
  /** When the scheduler was first seen refusing each pending pod (by Job name). */
  private readonly unschedulableSince = new Map<string, number>();
  /** Steps sent back already, until their Job is gone. */
  private readonly requeued = new Set<string>();
  /** Room was found lacking at this time: only freed room is released until the gate opens. */
  private shutSince: number | null = null;
  /** While shut: placed pods that ended, less pending pods placed since (each took one's room). */
  private freed = 0;

  constructor(o: ReleaseGateOptions) {
    this.o = o;
    this.maxVcpus = o.maxVcpus;
    this.clock = o.clock ?? Date.now;
  }

  releasable(): number {
    const now = this.clock();
    const pending = this.o.released().filter((s) => !s.placed && !this.requeued.has(s.jobName));
    const holdMs = this.o.holdMs ?? DEFAULT_HOLD_MS;
    if (this.shutSince === null && pending.some((s) => s.unschedulable !== null && now - this.since(s.jobName, now) >= holdMs))
      this.shut(now);
    const room = this.shutSince === null ? this.o.maxPendingPods : this.freed;
    return Math.max(0, Math.min(room, this.o.maxPendingPods) - pending.length);
  }

  onMayOpen(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Room may have come (a node came or changed, or the retry time passed): open, and release again. */
  roomMayHaveFreed(): void {
    this.shutSince = null;
    this.freed = 0;
    this.notify();
  }

  /** A placed pod of ours ended: its room is free. */
  podEnded(): void {
    if (this.shutSince !== null) this.freed++;
    this.notify();
  }

  /** A pending pod was bound to a node: it waits no more (and took some freed room, if the gate is shut). */
  podPlaced(): void {
    if (this.shutSince !== null) this.freed = Math.max(0, this.freed - 1);
    this.notify();
  }

  private notify(): void {
    for (const l of this.listeners) l();
  }

  private shut(now: number): void {
    this.shutSince = now;
    this.freed = 0;
  }

  /**
   * Looks at the pending pods (call every second or so): sends back those refused for too long and
   * reopens a gate shut for retryMs.
   */
  tick(): void {
    const now = this.clock();
    const steps = this.o.released();
    const live = new Set(steps.map((s) => s.jobName));
    for (const name of this.requeued) if (!live.has(name)) this.requeued.delete(name);
    for (const name of this.unschedulableSince.keys()) if (!live.has(name)) this.unschedulableSince.delete(name);
    const requeueAfterMs = this.o.requeueAfterMs ?? DEFAULT_REQUEUE_AFTER_MS;
    for (const step of steps) {
      if (step.placed || step.unschedulable === null) {
        this.unschedulableSince.delete(step.jobName);
        continue;
      }
      const waited = now - this.since(step.jobName, now);
      if (waited < requeueAfterMs || this.requeued.has(step.jobName)) continue;
      this.requeued.add(step.jobName);
      if (this.shutSince === null) this.shut(now);
      this.o.requeue(step.jobName, `its pod found no node with room for ${Math.round(waited / 1000)} s (${step.unschedulable.trim()})`);
    }
    if (this.shutSince !== null && now - this.shutSince >= (this.o.retryMs ?? DEFAULT_RETRY_MS)) this.roomMayHaveFreed();
  }

  private since(jobName: string, now: number): number {
    let since = this.unschedulableSince.get(jobName);
    if (since === undefined) this.unschedulableSince.set(jobName, (since = now));
    return since;
  }
}
