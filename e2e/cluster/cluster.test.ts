// The cluster fixture: multi-document server-side apply (a CRD and its custom resource in one file,
// RBAC), kubectl in the test namespace, and a ServiceAccount identity that RBAC actually limits.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { startCluster, type Cluster } from './cluster.ts';
import { statusCode } from './node-heartbeat.ts';

const MANIFEST = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.fixture.ffmpeg-operator.dev
spec:
  group: fixture.ffmpeg-operator.dev
  scope: Namespaced
  names: { kind: Widget, plural: widgets, singular: widget }
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              x-kubernetes-preserve-unknown-fields: true
              properties:
                size: { type: integer, default: 7 }
---
apiVersion: fixture.ffmpeg-operator.dev/v1
kind: Widget
metadata: { name: first }
spec: { colour: blue }
---
apiVersion: v1
kind: ConfigMap
metadata: { name: settings }
data: { mode: fast }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: reader }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: configmap-reader }
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: reader-reads-configmaps }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmap-reader }
subjects:
  - { kind: ServiceAccount, name: reader }
`;

describe('cluster fixture', () => {
  let cluster: Cluster;
  let tmp: string;

  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'ffop-cluster-'));
    cluster = await startCluster();
  });

  after(async () => {
    await cluster?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  test('applyYaml applies every document of a file, into the test namespace, and again idempotently', async () => {
    const file = join(tmp, 'manifest.yaml');
    await writeFile(file, MANIFEST);
    const applied = await cluster.applyYaml(file);
    assert.deepEqual(
      applied.map((o) => o.kind),
      ['CustomResourceDefinition', 'Widget', 'ConfigMap', 'ServiceAccount', 'Role', 'RoleBinding'],
    );
    await cluster.applyYaml(MANIFEST);

    const widget = await cluster.kubeconfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: 'fixture.ffmpeg-operator.dev',
      version: 'v1',
      namespace: cluster.namespace,
      plural: 'widgets',
      name: 'first',
    });
    // The schema's default and preserve-unknown-fields survived the trip through the client.
    assert.deepEqual(widget.spec, { colour: 'blue', size: 7 });

    const configMap = await cluster.kubectl(['get', 'configmap', 'settings', '-o', 'jsonpath={.data.mode}']);
    assert.equal(configMap.code, 0, configMap.stderr);
    assert.equal(configMap.stdout, 'fast');
  });

  test('kubectl reports failures through its exit code', async () => {
    const missing = await cluster.kubectl(['get', 'configmap', 'no-such-thing']);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /not found/);
  });

  test('serviceAccountKubeConfig authenticates as the ServiceAccount, limited by RBAC', async () => {
    await cluster.applyYaml(MANIFEST);
    const reader = (await cluster.serviceAccountKubeConfig('reader')).makeApiClient(CoreV1Api);
    const configMaps = await reader.listNamespacedConfigMap({ namespace: cluster.namespace });
    assert.ok(configMaps.items.some((c) => c.metadata?.name === 'settings'));
    await assert.rejects(reader.listNamespacedSecret({ namespace: cluster.namespace }), (err) => statusCode(err) === 403);

    // A new ServiceAccount is created on demand and has no rights at all.
    const nobody = (await cluster.serviceAccountKubeConfig('nobody')).makeApiClient(CoreV1Api);
    await assert.rejects(nobody.listNamespacedConfigMap({ namespace: cluster.namespace }), (err) => statusCode(err) === 403);
  });
});
