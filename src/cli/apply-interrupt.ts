// SIGINT and SIGTERM during `converge apply`: the first stops it in order, a second exits at once.
import type { CommandIo } from './command.js';
import type { Progress } from './tty.js';

/**
 * SIGINT and SIGTERM while jobs run: the first stops the apply in order (nothing more enqueued, jobs in flight
 * finish or are handed back, nothing left locked); a second exits at once.
 */
export function catchInterrupt(
  io: CommandIo,
  progress: Progress,
): { signal: AbortSignal; readonly reason: NodeJS.Signals | undefined; release(): void } {
  const controller = new AbortController();
  let reason: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (reason) {
      progress.write(
        io.stderr,
        `converge apply: second ${signal}: exiting at once; jobs in flight stay locked until their lock expires (about 30s)\n`,
      );
      process.exit(1);
    }
    reason = signal;
    progress.write(
      io.stderr,
      `converge apply: ${signal}: stopping: nothing more is enqueued; jobs in flight get 5s to finish, then are handed back (${signal} again exits at once)\n`,
    );
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    get reason() {
      return reason;
    },
    release() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
