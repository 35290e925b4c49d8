// Bounded concurrency for async work over a list (repository listings, discovery previews).

/** Runs `task` over `items` with at most `limit` in flight; the first failure rejects once the running ones settle. */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  async function lane(): Promise<void> {
    while (!failed && next < items.length) {
      const index = next++;
      try {
        results[index] = await task(items[index]!);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  }
  const lanes = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane);
  const settled = await Promise.allSettled(lanes);
  const rejection = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (rejection) throw rejection.reason;
  return results;
}
