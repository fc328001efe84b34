import type { PGliteOptions } from '@electric-sql/pglite';

/**
 * PostgreSQL's default 128 MB of shared buffers would all become resident WebAssembly memory; the
 * embedded service's working set is small, and the data files stay in the OS page cache anyway.
 */
export const PGLITE_OPTIONS: PGliteOptions = { postgresqlconf: ['shared_buffers = 16MB'] };
