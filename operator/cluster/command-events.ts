// Kubernetes Events on a command's FfmpegCommand (`kubectl describe ffc <name>` shows them), in the
// resource's own namespace: what a person watching the cluster should hear of (queued, started, each
// step, the end, a step sent back to the queue or run again, a resource refused).
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { randomBytes } from 'node:crypto';
import { API_VERSION, KIND } from '../../core/k8s/names.ts';
import type { ResourceRef } from './command-resources.ts';

export interface CommandEvent {
  reason: string;
  message: string;
  warning: boolean;
}

export class CommandEvents {
  private readonly core: CoreV1Api;
  private readonly o: { logger: Logger; component: string; refOf: (commandId: string) => Promise<ResourceRef | null> };

  constructor(o: { kubeconfig: KubeConfig; logger: Logger; component: string; refOf: (commandId: string) => Promise<ResourceRef | null> }) {
    this.core = o.kubeconfig.makeApiClient(CoreV1Api);
    this.o = o;
  }

  /** Records the event on the command's resource; a failure is logged, never thrown (an Event is a courtesy, the log line is the record). */
  record(commandId: string, event: CommandEvent): void {
    void this.o
      .refOf(commandId)
      .then((ref) => ref && this.create(ref, event))
      .catch((err: unknown) => this.failed(commandId, err));
  }

  /** Records the event on a resource known already (one being taken in or refused). */
  recordOn(ref: ResourceRef, event: CommandEvent): void {
    void this.create(ref, event).catch((err: unknown) => this.failed(ref.name, err));
  }

  private failed(what: string, err: unknown): void {
    this.o.logger.warn({ resource: what, err: (err as Error).message }, 'could not record a Kubernetes Event');
  }

  private async create(ref: ResourceRef, event: CommandEvent): Promise<void> {
    const now = new Date();
    await this.core.createNamespacedEvent({
      namespace: ref.namespace,
      body: {
        metadata: { name: `${ref.name}.${randomBytes(6).toString('hex')}`, namespace: ref.namespace },
        involvedObject: { apiVersion: API_VERSION, kind: KIND, name: ref.name, namespace: ref.namespace, uid: ref.uid },
        reason: event.reason,
        message: event.message.slice(0, 1024),
        type: event.warning ? 'Warning' : 'Normal',
        source: { component: this.o.component },
        reportingComponent: this.o.component,
        reportingInstance: this.o.component,
        firstTimestamp: now,
        lastTimestamp: now,
        eventTime: undefined,
        count: 1,
      },
    });
  }
}
