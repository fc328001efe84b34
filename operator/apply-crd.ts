// `node dist/operator/apply-crd.js <crd.yaml>`: the chart's pre-upgrade hook. Helm installs crds/ once
// and never upgrades it, so the hook server-side-applies the chart's CRD before the new operator
// starts, then waits until the API server serves every version of it. Exits non-zero with the reason
// when the API server refuses the CRD or does not serve it in time.
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import {
  ApiException,
  ApiextensionsV1Api,
  ApisApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  loadYaml,
  type KubernetesObject,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { loadKubeConfig } from '../core/k8s/kubeconfig.ts';

/** The field manager of the hook's apply (and of the documented manual apply's equivalent). */
export const FIELD_MANAGER = 'ffmpeg-operator-chart';

type Crd = V1CustomResourceDefinition & KubernetesObject;

export interface ApplyCrdOptions {
  /** How long to wait for Established and every served version (default 60 s). */
  timeoutMs?: number;
  log?: (line: string) => void;
}

/** Server-side-applies the CRD in `yamlText` (forcing conflicts), then waits until it is served. */
export async function applyCrd(kc: KubeConfig, yamlText: string, opts: ApplyCrdOptions = {}): Promise<void> {
  const { timeoutMs = 60_000, log = () => {} } = opts;
  const crd = loadYaml<Crd>(yamlText);
  if (crd?.kind !== 'CustomResourceDefinition' || !crd.metadata?.name) {
    throw new Error('the file holds no CustomResourceDefinition with a name');
  }
  const name = crd.metadata.name;
  try {
    // Force: Helm created the CRD at install (manager "helm"), an admin may have applied it by hand;
    // the chart's file is what this release needs.
    await KubernetesObjectApi.makeApiClient(kc).patch(crd, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
  } catch (err) {
    throw new Error(`applying CustomResourceDefinition ${name} failed: ${describe(err)}`);
  }
  log(`applied CustomResourceDefinition ${name}`);

  const extensions = kc.makeApiClient(ApiextensionsV1Api);
  const served = crd.spec.versions.filter((v) => v.served).map((v) => `${crd.spec.group}/${v.name}`);
  const deadline = Date.now() + timeoutMs;
  let waitingFor = 'the Established condition';
  let last = '';
  for (;;) {
    try {
      const current = await extensions.readCustomResourceDefinition({ name });
      const established = current.status?.conditions?.find((c) => c.type === 'Established');
      if (established?.status !== 'True') {
        waitingFor = 'the Established condition';
        last = established ? `Established=${established.status}: ${established.message ?? ''}` : 'no Established condition yet';
      } else {
        // Discovery lists every served version of the group: clients can use each of them now.
        const groups = await kc.makeApiClient(ApisApi).getAPIVersions();
        const listed = groups.groups.find((g) => g.name === crd.spec.group)?.versions.map((v) => v.groupVersion) ?? [];
        const missing = served.filter((apiVersion) => !listed.includes(apiVersion));
        if (missing.length === 0) {
          log(`CustomResourceDefinition ${name} is established; served: ${served.join(', ')}`);
          return;
        }
        waitingFor = `${missing.join(', ')} to be served`;
        last = 'not in discovery yet';
      }
    } catch (err) {
      last = describe(err);
    }
    if (Date.now() > deadline) {
      throw new Error(`CustomResourceDefinition ${name}: timed out after ${timeoutMs / 1000} s waiting for ${waitingFor} (${last})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The API server's message (its Status body) rather than the client's generic text. */
function describe(err: unknown): string {
  if (err instanceof ApiException) {
    try {
      const status = JSON.parse(String(err.body)) as { message?: string };
      if (status.message) return `HTTP ${err.code}: ${status.message}`;
    } catch {
      // not a Status body
    }
    return `HTTP ${err.code}: ${String(err.body)}`;
  }
  return err instanceof Error ? err.message : String(err);
}

async function main(argv: string[]): Promise<number> {
  if (argv.length !== 1) {
    console.error('usage: node apply-crd.js <crd.yaml>');
    return 2;
  }
  try {
    const text = await readFile(argv[0], 'utf8');
    await applyCrd(loadKubeConfig(), text, { timeoutMs: 120_000, log: (line) => console.log(`apply-crd: ${line}`) });
    return 0;
  } catch (err) {
    console.error(`apply-crd: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
