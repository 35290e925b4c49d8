// Polling for a condition in tests: the one `until` of the suites (integration and e2e).
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `check` every `everyMs` until it returns a truthy value, which it returns; throws naming `what` (and the
 * last error `check` threw, if any) once `timeoutMs` passed. A condition, never a fixed wait: load only slows it.
 */
export async function until<T>(
  what: string,
  check: () => T | Promise<T>,
  timeoutMs = 15_000,
  everyMs = 50,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
      last = undefined;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      const reason =
        last === undefined ? '' : ` (last error: ${last instanceof Error ? last.message : JSON.stringify(last)})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${reason}`);
    }
    await sleep(everyMs);
  }
}
