// Fan-out of command changes to the live event streams of one process. The database notifies every
// change of a command (migration 0004, whichever process wrote it); for a command that has listeners,
// the hub makes ONE read (through the poll cache) and hands its result to all of them, however many
// streams watch it. Changes notified while a read runs make one more read after it, not one each.
import type { CommandWithOutputs } from './commands-repo.ts';

/** The poll path's read: the command with its outputs if it belongs to the account, else null. */
export type CommandRead = (accountId: string, id: string) => Promise<CommandWithOutputs | null>;
/** Gets each read of the command made after a change; null once it is gone. */
export type CommandListener = (value: CommandWithOutputs | null) => void;

interface Topic {
  /** Every listener of a command is of its account (the stream checked it before subscribing). */
  accountId: string;
  listeners: Set<CommandListener>;
  reading: boolean;
  /** A change came while reading: read again after. */
  again: boolean;
  retry: NodeJS.Timeout | null;
}

export interface CommandEventHubOptions {
  read: CommandRead;
  /** A read failed (e.g. the database is unreachable); it is tried again after retryMs. */
  onReadError?: (err: unknown, commandId: string) => void;
  retryMs?: number;
}

export class CommandEventHub {
  private readonly topics = new Map<string, Topic>();
  private readonly read: CommandRead;
  private readonly onReadError: (err: unknown, commandId: string) => void;
  private readonly retryMs: number;
  /** Reads made since start (tests and the bench check the fan-out). */
  reads = 0;

  constructor(o: CommandEventHubOptions) {
    this.read = o.read;
    this.onReadError = o.onReadError ?? (() => {});
    this.retryMs = o.retryMs ?? 1_000;
  }

  /** Listens to the changes of `commandId` (of `accountId`) from now on; returns the unsubscribe. */
  subscribe(accountId: string, commandId: string, listener: CommandListener): () => void {
    let topic = this.topics.get(commandId);
    if (topic === undefined) {
      topic = { accountId, listeners: new Set(), reading: false, again: false, retry: null };
      this.topics.set(commandId, topic);
    }
    topic.listeners.add(listener);
    const mine = topic;
    return () => {
      mine.listeners.delete(listener);
      if (mine.listeners.size === 0 && this.topics.get(commandId) === mine) {
        if (mine.retry) clearTimeout(mine.retry);
        this.topics.delete(commandId);
      }
    };
  }

  /** The database notified a change of `commandId` (after the poll cache forgot its entry). */
  changed(commandId: string): void {
    const topic = this.topics.get(commandId);
    if (topic === undefined) return;
    if (topic.reading) {
      topic.again = true;
      return;
    }
    void this.readFor(commandId, topic);
  }

  /** Notifications may have been missed: every watched command is read again. */
  resync(): void {
    for (const id of this.topics.keys()) this.changed(id);
  }

  /** Commands with listeners. */
  get watched(): number {
    return this.topics.size;
  }

  private async readFor(commandId: string, topic: Topic): Promise<void> {
    if (topic.retry) clearTimeout(topic.retry);
    topic.retry = null;
    topic.reading = true;
    do {
      topic.again = false;
      let value: CommandWithOutputs | null;
      this.reads += 1;
      try {
        value = await this.read(topic.accountId, commandId);
      } catch (err) {
        topic.reading = false;
        this.onReadError(err, commandId);
        if (this.topics.get(commandId) === topic) {
          topic.retry = setTimeout(() => this.changed(commandId), this.retryMs);
          topic.retry.unref();
        }
        return;
      }
      // A copy: a listener may unsubscribe (its stream ended) while this loop runs.
      for (const listener of [...topic.listeners]) listener(value);
    } while (topic.again && this.topics.get(commandId) === topic);
    topic.reading = false;
  }
}
