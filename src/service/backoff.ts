// The one backoff of converge's retries (a read's tries in the transport, a job's attempts): exponential with full jitter, never below a Retry-After.

/** The shape of a backoff: the first ceiling, doubled per failed try up to a cap. */
interface Backoff {
  /** Ceiling of the wait after the first failed try. */
  baseMs: number;
  /** No ceiling grows past this. */
  capMs: number;
}

/**
 * The wait after failed try number `failed` (1 for the first): random in [0, min(cap, base * 2^(failed-1))) ("full
 * jitter": many clients that failed together do not come back together), and never below `retryAfterMs`, the
 * service's Retry-After (the caller decides how long a Retry-After it is willing to wait out).
 */
export function backoffDelay(
  failed: number,
  backoff: Backoff,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(backoff.capMs, backoff.baseMs * 2 ** Math.max(0, failed - 1));
  const jittered = Math.floor(random() * ceiling);
  return retryAfterMs === undefined ? jittered : Math.max(jittered, retryAfterMs);
}
