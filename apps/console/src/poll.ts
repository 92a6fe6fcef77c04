/** `usePoll`: loads a resource now and every `intervalMs` while the page is visible; `reload()` loads it at once. */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Polled<T> {
  data: T | undefined;
  error: string | undefined;
  reload: () => void;
}

export function usePoll<T>(load: () => Promise<T>, intervalMs: number, deps: unknown[] = []): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const generation = useRef(0);
  const run = useCallback(() => {
    const mine = ++generation.current;
    load().then(
      (value) => {
        if (mine !== generation.current) return;
        setData(value);
        setError(undefined);
      },
      (failure: unknown) => {
        if (mine === generation.current) setError(failure instanceof Error ? failure.message : String(failure));
      },
    );
  }, deps);
  useEffect(() => {
    run();
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') run();
    }, intervalMs);
    return () => {
      clearInterval(timer);
      generation.current++;
    };
  }, [run, intervalMs]);
  return { data, error, reload: run };
}
