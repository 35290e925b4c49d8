// The logger the jobs folder writes to (a pino logger fits it), and a throttle for the errors of queues and connections.

/** Subset of a pino logger; never given a secret value. */
export interface QueueLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const SILENT_LOGGER: QueueLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** One line per kind of background error per this many ms (a Redis outage makes every connection report each retry). */
export const ERROR_LOG_INTERVAL_MS = 30_000;

/** Reports an error of one source (a queue, a worker, a connection); see throttledErrors. */
export type ErrorReporter = (source: string, error: unknown) => void;

/** The first line of an error's message, never a stack. */
export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message.split('\n')[0] || error.name;
  return String(error);
}

/**
 * Logs the error events of BullMQ queues, workers, queue events and Redis connections at warn level: at most one
 * line per source and kind of error (its code, else its message) per `intervalMs`, with the count left out meanwhile.
 */
export function throttledErrors(
  log: QueueLogger,
  intervalMs = ERROR_LOG_INTERVAL_MS,
  now: () => number = Date.now,
): ErrorReporter {
  const last = new Map<string, { at: number; skipped: number }>();
  return (source, error) => {
    const text = errorText(error);
    const code = (error as { code?: unknown } | undefined)?.code;
    const kind = `${source}\0${typeof code === 'string' ? code : text}`;
    const seen = last.get(kind);
    const at = now();
    if (seen && at - seen.at < intervalMs) {
      seen.skipped += 1;
      return;
    }
    last.set(kind, { at, skipped: 0 });
    if (last.size > 1_000) last.delete(last.keys().next().value!);
    log.warn({ source, error: text, ...(seen?.skipped ? { repeated: seen.skipped } : {}) }, 'background error');
  };
}
