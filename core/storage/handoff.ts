// Embedded mode: a runner on the storage's filesystem hands an output over by moving it into the
// local storage's hand-off folder and sending a PUT that names it (no body), instead of streaming a
// second copy. Only the service's user can write that folder (0700), and names are 24 random bytes:
// a PUT can only adopt a file the runner put there moments before.
/** The file's name in the hand-off folder. */
export const HANDOFF_HEADER = 'x-ffop-handoff';
/** Its size in bytes, as the runner measured and reports it. */
export const HANDOFF_SIZE_HEADER = 'x-ffop-handoff-size';
export const HANDOFF_NAME_PATTERN = /^[A-Za-z0-9_-]{32}$/;
