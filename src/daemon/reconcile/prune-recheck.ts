// The reconcile that sends a delete once its prune_grace has passed (src/core/prune-grace.ts): one timer, replaced by each reconcile.

/** A scheduler of one `request` at a time: each call replaces the timer (undefined clears it); the timer never keeps the process alive. */
export function pruneRechecks(request: () => void): (at: number | undefined) => void {
  let timer: NodeJS.Timeout | undefined;
  return (at) => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (at === undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      request();
    }, Math.max(0, at - Date.now()));
    timer.unref();
  };
}
