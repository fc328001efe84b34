// The open event streams of this process (GET /v1/commands/{id}/events): their limits (per API key
// and per process), one heartbeat timer for all, their bounded lifetime, the closing of a revoked
// key's streams, and closing them all at shutdown (a server cannot stop while a response is open).
import type { CommandWithOutputs } from '../../core/commands/commands-repo.ts';
import type { CommandEventHub } from '../../core/commands/command-event-hub.ts';
import { recordJson, stateView } from './command-event-view.ts';

export const DEFAULT_MAX_EVENT_STREAMS_PER_KEY = 20;
export const DEFAULT_MAX_EVENT_STREAMS = 5_000;

export interface EventStreamsOptions {
  hub: CommandEventHub;
  /** The poll record of a read (the `end` event's data). */
  record: (value: CommandWithOutputs) => Promise<unknown>;
  maxPerKey?: number;
  maxTotal?: number;
  /** A `: keep-alive` comment this often (default 15 s), so that proxies keep an idle stream open. */
  heartbeatMs?: number;
  /** A stream closes after about this long (default 1 h); the client resumes with Last-Event-ID. */
  lifetimeMs?: number;
  /** A client that reads slower than its events come is let go past this many unsent bytes. */
  maxBufferedBytes?: number;
  onError?: (err: unknown) => void;
  clock?: () => number;
}

/** What the route answers over a limit: 429 with this detail and Retry-After. */
export interface StreamRefusal {
  detail: string;
  retryAfterSeconds: number;
}

/** A slot taken before the command is read; `open` turns it into a stream, `release` gives it back. */
export interface StreamSlot {
  keyId: string;
  released: boolean;
}

const encoder = new TextEncoder();
const KEEP_ALIVE = encoder.encode(': keep-alive\n\n');
/** How long a client waits before reconnecting after a drop (SSE `retry:`). */
const RECONNECT_MS = 3_000;

class OpenStream {
  controller!: ReadableStreamDefaultController<Uint8Array>;
  closed = false;
  /** The id of the state the client has: nothing is sent while the command is in it. */
  lastId: string | null;
  /** A read reached this stream from the hub: the connect read, if later, is older and dropped. */
  heard = false;
  /** Sends happen in order (an end record is made asynchronously). */
  private queue: Promise<void> = Promise.resolve();
  unsubscribe: () => void = () => {};

  readonly owner: EventStreams;
  readonly slot: StreamSlot;
  readonly opened: number;

  constructor(owner: EventStreams, slot: StreamSlot, opened: number, lastEventId: string | null) {
    this.owner = owner;
    this.slot = slot;
    this.opened = opened;
    this.lastId = lastEventId;
  }

  deliver(value: CommandWithOutputs | null): void {
    this.queue = this.queue.then(() => this.send(value)).catch((err: unknown) => this.owner.failed(this, err));
  }

  private async send(value: CommandWithOutputs | null): Promise<void> {
    if (this.closed) return;
    if (value === null) return this.close(); // deleted meanwhile
    const view = stateView(value);
    if (view.ended) {
      if (view.id !== this.lastId) this.write(event(view.id, 'end', await this.owner.recordOf(value)));
      return this.close();
    }
    if (view.id === this.lastId) return;
    this.lastId = view.id;
    this.write(event(view.id, 'state', view.json));
  }

  write(bytes: Uint8Array): void {
    if (this.closed) return;
    this.controller.enqueue(bytes);
    // A client that does not read: its unsent events would grow without bound.
    if ((this.controller.desiredSize ?? 0) < 0) this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.owner.forget(this);
    try {
      this.controller.close();
    } catch {
      // cancelled by the client already
    }
  }
}

function event(id: string, type: 'state' | 'end', data: string): Uint8Array {
  return encoder.encode(`id: ${id}\nevent: ${type}\ndata: ${data}\n\n`);
}

export class EventStreams {
  private readonly streams = new Set<OpenStream>();
  private readonly perKey = new Map<string, number>();
  private taken = 0;
  private timer: NodeJS.Timeout | null = null;
  private lastBeat = 0;
  private readonly o: Required<Omit<EventStreamsOptions, 'hub' | 'record'>> & Pick<EventStreamsOptions, 'hub' | 'record'>;

  constructor(o: EventStreamsOptions) {
    this.o = {
      maxPerKey: DEFAULT_MAX_EVENT_STREAMS_PER_KEY,
      maxTotal: DEFAULT_MAX_EVENT_STREAMS,
      heartbeatMs: 15_000,
      lifetimeMs: 3_600_000,
      maxBufferedBytes: 256 * 1024,
      onError: () => {},
      clock: Date.now,
      ...o,
    };
  }

  /** A slot for a stream of this key, or why not. Taken at once, before any await, so that a burst cannot pass the limits. */
  take(keyId: string): StreamSlot | StreamRefusal {
    const mine = this.perKey.get(keyId) ?? 0;
    if (mine >= this.o.maxPerKey) {
      return {
        detail: `Too many event streams: at most ${this.o.maxPerKey} open at once per API key; close one or retry later`,
        retryAfterSeconds: 5,
      };
    }
    if (this.taken >= this.o.maxTotal) {
      return {
        detail: 'Too many event streams open on this server; retry later or poll GET /v1/commands/{command_id}',
        retryAfterSeconds: 5,
      };
    }
    this.perKey.set(keyId, mine + 1);
    this.taken += 1;
    return { keyId, released: false };
  }

  release(slot: StreamSlot): void {
    if (slot.released) return;
    slot.released = true;
    this.taken -= 1;
    const left = (this.perKey.get(slot.keyId) ?? 1) - 1;
    if (left === 0) this.perKey.delete(slot.keyId);
    else this.perKey.set(slot.keyId, left);
  }

  /**
   * The stream of a command the caller may see. Subscribes before it reads, so that no change between
   * the read and the subscription is missed; `read` is the connect read (through the poll cache).
   */
  async open(
    slot: StreamSlot,
    accountId: string,
    commandId: string,
    lastEventId: string | null,
    read: () => Promise<CommandWithOutputs | null>,
  ): Promise<Response | null> {
    const stream = new OpenStream(this, slot, this.o.clock(), lastEventId);
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          stream.controller = controller;
          controller.enqueue(encoder.encode(`retry: ${RECONNECT_MS}\n\n`));
        },
        // The client went away: its slot is free at once.
        cancel: () => stream.close(),
      },
      { highWaterMark: this.o.maxBufferedBytes, size: (chunk) => chunk.byteLength },
    );
    this.streams.add(stream);
    this.startTimer();
    stream.unsubscribe = this.o.hub.subscribe(accountId, commandId, (value) => {
      stream.heard = true;
      stream.deliver(value);
    });
    if (stream.closed) stream.unsubscribe(); // closed before it subscribed (shutdown)
    let first: CommandWithOutputs | null;
    try {
      first = await read();
    } catch (err) {
      stream.close();
      throw err;
    }
    if (first === null) {
      stream.close();
      return null;
    }
    if (!stream.heard) stream.deliver(first);
    return new Response(body, {
      status: 200,
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        // Proxies such as nginx must pass events on as they come.
        'x-accel-buffering': 'no',
      },
    });
  }

  /** Ended (by the client, the command's end, a limit or shutdown): frees its slot. */
  forget(stream: OpenStream): void {
    if (!this.streams.delete(stream)) return;
    stream.unsubscribe();
    this.release(stream.slot);
    if (this.streams.size === 0) this.stopTimer();
  }

  failed(stream: OpenStream, err: unknown): void {
    this.o.onError(err);
    stream.close();
  }

  recordOf(value: CommandWithOutputs): Promise<string> {
    return recordJson(value, this.o.record);
  }

  /** Keys changed (revoked, account gone): `stillValid` answers which of the keys with streams remain. */
  async keysChanged(stillValid: (keyIds: string[]) => Promise<Set<string>>): Promise<void> {
    const keyIds = [...this.perKey.keys()];
    if (keyIds.length === 0) return;
    const valid = await stillValid(keyIds);
    for (const stream of [...this.streams]) if (!valid.has(stream.slot.keyId)) stream.close();
  }

  /** Open streams. */
  get size(): number {
    return this.streams.size;
  }

  /** Shutdown: every stream ends now (clients reconnect elsewhere with Last-Event-ID). */
  closeAll(): void {
    for (const stream of [...this.streams]) stream.close();
    this.stopTimer();
  }

  private startTimer(): void {
    if (this.timer) return;
    // Often enough for the lifetime too, when it is shorter than the heartbeat (tests, the conformance run).
    this.lastBeat = this.o.clock();
    this.timer = setInterval(() => this.tick(), Math.min(this.o.heartbeatMs, this.o.lifetimeMs));
    this.timer.unref();
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One timer for every stream: a heartbeat, or the end of a stream past its lifetime. */
  private tick(): void {
    const now = this.o.clock();
    const beat = now - this.lastBeat >= this.o.heartbeatMs;
    if (beat) this.lastBeat = now;
    for (const stream of [...this.streams]) {
      if (now - stream.opened >= this.o.lifetimeMs) stream.close();
      else if (beat) stream.write(KEEP_ALIVE);
    }
  }
}
