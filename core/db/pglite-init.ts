// Creates a new PGlite data folder, then exits. Run as its own process by database.ts: initdb grows
// PGlite's WebAssembly memory to about 700 MB, and WebAssembly memory never shrinks, so a service that
// created its database itself would keep that for its whole life.
import { PGlite } from '@electric-sql/pglite';
import { PGLITE_OPTIONS } from './pglite-options.ts';

const folder = process.argv[2];
if (!folder) throw new Error('usage: pglite-init <folder>');
const client = await PGlite.create(folder, PGLITE_OPTIONS);
await client.close();
