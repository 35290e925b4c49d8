// The reconcile that sends a delete once its prune_grace has passed (src/core/prune-grace.ts): one timer, replaced by each reconcile.

/**
 * A scheduler of one `request` at a time, `ms` from now (a delay, never a time of day: the due time is on Redis'
 * clock, not this process's); each call replaces the timer (undefined clears it); the timer never keeps the process alive.
 */
export function pruneRechecks(request: () => void): (ms: number | undefined) => void {
  let timer: NodeJS.Timeout | undefined;
  return (ms) => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (ms === undefined) return;
    timer = setTimeout(
      () => {
        timer = undefined;
        request();
      },
      Math.max(0, ms),
    );
    timer.unref();
  };
}
