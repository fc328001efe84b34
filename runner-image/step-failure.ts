import type { ErrorStatus } from '../core/commands/error-status.ts';

/** A failure with the error status the command ends with. */
export class StepFailure extends Error {
  readonly errorStatus: ErrorStatus;
  constructor(errorStatus: ErrorStatus, message: string) {
    super(message);
    this.errorStatus = errorStatus;
  }
}

/** URLs in messages lose their query string: it may carry a signature. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(not a URL)';
  }
}
