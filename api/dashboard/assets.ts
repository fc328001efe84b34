// The dashboard's files: its stylesheet, its own modules (api/dashboard/ui/) and the ESM builds of
// preact and htm from node_modules. Nothing is fetched from elsewhere, so the dashboard works offline.
// Run from the compiled service (dist/), the modules are the JavaScript that scripts/build.sh compiled;
// run from the TypeScript sources (tsx), they are stripped of their types here, as tsx does for the service.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { VENDOR_MODULES, type VendorName } from './page.ts';

export interface Asset {
  body: string;
  contentType: string;
  etag: string;
}

const JAVASCRIPT = 'text/javascript; charset=utf-8';
const FROM_SOURCES = import.meta.url.endsWith('.ts');
const UI_DIR = new URL('./ui/', import.meta.url);
const STYLESHEET = new URL('./static/dashboard.css', import.meta.url);

function asset(body: string, contentType: string): Asset {
  return { body, contentType, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}

async function readOrNull(url: URL): Promise<string | null> {
  return readFile(fileURLToPath(url), 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
}

/** The files do not change while the service runs: each is read (and transpiled) once. */
export class DashboardAssets {
  readonly #loaded = new Map<string, Promise<Asset | null>>();

  #once(id: string, load: () => Promise<Asset | null>): Promise<Asset | null> {
    let found = this.#loaded.get(id);
    if (!found) {
      found = load();
      this.#loaded.set(id, found);
      // Only files are kept: a missing name (any name may be asked for) or a failed read is not.
      const forget = () => this.#loaded.delete(id);
      found.then((asset) => asset ?? forget(), forget);
    }
    return found;
  }

  stylesheet(): Promise<Asset | null> {
    return this.#once('css', async () => {
      const css = await readOrNull(STYLESHEET);
      return css === null ? null : asset(css, 'text/css; charset=utf-8');
    });
  }

  /** `name` is `<module>.js` (as the compiled modules import each other) or `<module>.ts` (as the sources do). */
  uiModule(name: string): Promise<Asset | null> {
    const base = /^([a-z][a-z0-9-]*)\.(js|ts)$/.exec(name)?.[1];
    if (!base) return Promise.resolve(null);
    return this.#once(`ui:${base}`, async () => {
      const file = new URL(`${base}${FROM_SOURCES ? '.ts' : '.js'}`, UI_DIR);
      const code = await readOrNull(file);
      if (code === null) return null;
      if (!FROM_SOURCES) return asset(stripSourceMapComment(code), JAVASCRIPT);
      const { transform } = await import('esbuild');
      const { code: js } = await transform(code, { loader: 'ts', format: 'esm', target: 'es2022', sourcefile: fileURLToPath(file) });
      return asset(js, JAVASCRIPT);
    });
  }

  vendorModule(name: string): Promise<Asset | null> {
    const base = /^([a-z-]+)\.js$/.exec(name)?.[1];
    if (!base || !Object.hasOwn(VENDOR_MODULES, base)) return Promise.resolve(null);
    return this.#once(`vendor:${base}`, async () => {
      // The package's own ESM entry (its "import" export), found as Node would find it.
      const code = await readOrNull(new URL(import.meta.resolve(VENDOR_MODULES[base as VendorName])));
      return code === null ? null : asset(stripSourceMapComment(code), JAVASCRIPT);
    });
  }
}

/** Source maps are not served (the images do not hold them): without the comment the browser does not ask. */
function stripSourceMapComment(code: string): string {
  return code.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');
}
