// What `converge apply` writes on stderr while its jobs run: worker log lines, and the resources waiting behind
// another run's jobs.
import type { runApply } from '../apply/apply.js';
import type { QueueLogger } from '../jobs/queue/log.js';
import type { CommandIo } from './command.js';
import { LOG_LEVELS } from './setting-table.js';
import type { Progress } from './tty.js';

/** Log levels, least severe first (the order of the log_level setting's choices). */
const LEVELS: readonly string[] = LOG_LEVELS;

/** Seconds, rounded up, for a countdown. */
function seconds(ms: number): string {
  return `${Math.ceil(ms / 1000)}s`;
}

/** "Deployment/a (lock expires in 23s)": one resource waiting behind another run's job. */
function countdown(w: { key: string; lockTtlMs: number | undefined }): string {
  return w.lockTtlMs === undefined
    ? `${w.key} (its job is queued again)`
    : `${w.key} (lock expires within ${seconds(w.lockTtlMs)})`;
}

/** Resources waiting behind jobs of an earlier run: each named once on stderr, then a countdown on the progress line. */
export function behindReporter(
  io: CommandIo,
  progress: Progress,
): NonNullable<Parameters<typeof runApply>[0]['onWaitingBehind']> {
  let reported = false;
  return (waiting) => {
    if (!reported) {
      reported = true;
      for (const w of waiting) progress.write(io.stderr, `converge apply: ${behindLine(w)}\n`);
    }
    progress.show(
      `waiting for ${waiting.length} resource${waiting.length === 1 ? '' : 's'} held by jobs of an earlier run: ${waiting.map(countdown).join(', ')}`,
    );
  };
}

/** The first report of a resource waiting behind a job that is not ours. */
function behindLine(w: { key: string; behind: string; lockTtlMs: number | undefined }): string {
  const lock =
    w.lockTtlMs === undefined
      ? 'it holds no lock and runs next'
      : `its lock expires within ${seconds(w.lockTtlMs)}, then it runs again with the newest desired state`;
  return `${w.key} waits for job ${w.behind} of an earlier run (interrupted, or running in another process): ${lock}`;
}

/** Worker log lines on stderr at or above the log level; they carry keys and service messages, never secret values. */
export function lineLogger(io: CommandIo, level: string, progress: Progress): QueueLogger {
  const threshold = LEVELS.indexOf(level);
  const emit = (name: string) => (obj: object, msg: string) => {
    if (LEVELS.indexOf(name) < threshold) return;
    const fields = Object.entries(obj)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v) : String(v)}`)
      .join(' ');
    progress.write(io.stderr, `converge apply: ${name}: ${msg}${fields ? ` ${fields}` : ''}\n`);
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}
