// A periodic runner: never overlaps itself, stops on request and waits for the run in progress.
export interface Ticker {
  stop(): Promise<void>;
}

export function startTicker(intervalMs: number, run: () => Promise<unknown>, onError: (err: unknown) => void): Ticker {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let current: Promise<void> = Promise.resolve();
  const tick = () => {
    current = (async () => {
      try {
        await run();
      } catch (err) {
        if (!stopped) onError(err);
      }
    })().then(() => {
      if (!stopped) timer = setTimeout(tick, intervalMs);
    });
  };
  timer = setTimeout(tick, intervalMs);
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current;
    },
  };
}
