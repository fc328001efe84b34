// How long the runner spent fetching inputs and storing outputs, reported with its result
// (PhaseSeconds in core/jobs/step-spec.ts). A phase still open when the step fails counts up to then.
import type { PhaseSeconds } from '../core/jobs/step-spec.ts';

type Phase = 'download' | 'upload';

export class PhaseClock {
  private readonly now: () => number;
  private readonly ended = new Map<Phase, number>();
  private open: { phase: Phase; since: number } | null = null;

  constructor(now: () => number = () => performance.now()) {
    this.now = now;
  }

  /** Starts `phase` (ending the one open). */
  begin(phase: Phase): void {
    this.end();
    this.open = { phase, since: this.now() };
  }

  /** Ends the open phase, if any. */
  end(): void {
    if (this.open === null) return;
    const { phase, since } = this.open;
    this.ended.set(phase, (this.ended.get(phase) ?? 0) + (this.now() - since) / 1000);
    this.open = null;
  }

  /** The phases reached so far, the open one counted up to now; those not reached are left out. */
  seconds(): PhaseSeconds {
    this.end();
    const download = this.ended.get('download');
    const upload = this.ended.get('upload');
    return {
      ...(download === undefined ? {} : { downloadSeconds: download }),
      ...(upload === undefined ? {} : { uploadSeconds: upload }),
    };
  }
}
