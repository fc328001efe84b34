// Loads now, then again after `nextDelay(data)` ms (null stops) while the component is shown: how the
// dashboard stays live without a push channel. Errors (a 429 too) keep the last data and are shown next
// to it; polling goes on.
import { useEffect, useState } from 'preact/hooks';
import { messageOf } from './format.ts';

export interface Polled<T> {
  data: T | null;
  /** Whether a load has succeeded yet (data may be null when that is the answer). */
  loaded: boolean;
  error: string | null;
  /** Loads again at once (after an action changed what is shown). */
  reload: () => void;
}

export function usePolling<T>(load: () => Promise<T>, nextDelay: (data: T | null) => number | null, deps: unknown[]): Polled<T> {
  const [state, setState] = useState<{ data: T | null; loaded: boolean; error: string | null }>({ data: null, loaded: false, error: null });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    // A hidden tab does not poll (the API key's rate limit is shared); it loads again when shown.
    let waitingForVisible = false;
    const run = async () => {
      let data: T | null = null;
      try {
        data = await load();
        if (!stopped) setState({ data, loaded: true, error: null });
      } catch (err) {
        if (!stopped) setState((s) => ({ ...s, error: messageOf(err) }));
      }
      const delay = nextDelay(data);
      if (stopped || delay === null) return;
      timer = setTimeout(() => {
        if (document.hidden) waitingForVisible = true;
        else void run();
      }, delay);
    };
    const shown = () => {
      if (stopped || document.hidden || !waitingForVisible) return;
      waitingForVisible = false;
      void run();
    };
    document.addEventListener('visibilitychange', shown);
    void run();
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', shown);
    };
    // The caller names what `load` depends on; `round` is a reload.
  }, [...deps, round]);
  return { ...state, reload: () => setRound((r) => r + 1) };
}
