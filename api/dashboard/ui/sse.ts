// Server-Sent Events read from a fetch body: EventSource cannot send the X-API-KEY header, so the
// dashboard reads the stream itself. A parser that takes text as it comes, in pieces of any size.

export interface SseEvent {
  id: string | null;
  event: string;
  data: string;
}

export class SseParser {
  #buffer = '';

  /** The events completed by this piece of text. */
  push(text: string): SseEvent[] {
    this.#buffer += text.replace(/\r\n?/g, '\n');
    const events: SseEvent[] = [];
    let cut: number;
    while ((cut = this.#buffer.indexOf('\n\n')) >= 0) {
      const block = this.#buffer.slice(0, cut);
      this.#buffer = this.#buffer.slice(cut + 2);
      const e: SseEvent = { id: null, event: 'message', data: '' };
      let hasData = false;
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue; // comments: keep-alives
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') e.id = value;
        else if (field === 'event') e.event = value;
        else if (field === 'data') {
          e.data = hasData ? `${e.data}\n${value}` : value;
          hasData = true;
        }
      }
      if (hasData) events.push(e);
    }
    return events;
  }
}
