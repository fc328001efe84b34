// Kubernetes Events on a command's FfmpegCommand (`kubectl describe ffc <id>` shows them): what a
// person watching the cluster should hear of, such as a step sent back to the queue or run again.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { randomBytes } from 'node:crypto';
import { API_VERSION, KIND } from '../../core/k8s/names.ts';

export interface CommandEvent {
  reason: string;
  message: string;
  warning: boolean;
}

export class CommandEvents {
  private readonly core: CoreV1Api;
  private readonly o: { namespace: string; logger: Logger; component: string; uidOf: (commandId: string) => Promise<string | null> };

  constructor(o: {
    kubeconfig: KubeConfig;
    namespace: string;
    logger: Logger;
    component: string;
    uidOf: (commandId: string) => Promise<string | null>;
  }) {
    this.core = o.kubeconfig.makeApiClient(CoreV1Api);
    this.o = o;
  }

  /** Records the event; a failure is logged, never thrown (an Event is a courtesy, the log line is the record). */
  record(commandId: string, event: CommandEvent): void {
    void this.create(commandId, event).catch((err: unknown) =>
      this.o.logger.warn({ command_id: commandId, err: (err as Error).message }, 'could not record a Kubernetes Event'),
    );
  }

  private async create(commandId: string, event: CommandEvent): Promise<void> {
    const uid = await this.o.uidOf(commandId);
    if (!uid) return;
    const now = new Date();
    await this.core.createNamespacedEvent({
      namespace: this.o.namespace,
      body: {
        metadata: { name: `${commandId}.${randomBytes(6).toString('hex')}`, namespace: this.o.namespace },
        involvedObject: { apiVersion: API_VERSION, kind: KIND, name: commandId, namespace: this.o.namespace, uid },
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
