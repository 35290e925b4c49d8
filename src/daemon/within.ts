// Waits for a promise at most a given time: the stop's bounded steps and the readiness ping.

/** The promise's value when it resolves within `ms` (a rejection passes through); else `{ done: false }`, the promise left running. */
export async function within<T>(promise: Promise<T>, ms: number): Promise<{ done: true; value: T } | { done: false }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise.then((value) => ({ done: true as const, value })),
      new Promise<{ done: false }>((r) => (timer = setTimeout(() => r({ done: false }), Math.max(0, ms)))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
