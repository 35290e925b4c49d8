// Change windows (pure): whether automatic writes are blocked at an instant, by which window, until when, and whether a manual write may go (Argo CD's SyncWindows rules; docs/rollouts.md).
import { CronExpressionParser } from 'cron-parser';

/** One entry of the `windows` setting, read and checked (src/core/windows-config.ts). */
export interface ChangeWindow {
  kind: 'deny' | 'allow';
  /** A 5-field cron expression: when the window opens. */
  schedule: string;
  /** How long it stays open after each start, in ms, and as written (for messages). */
  durationMs: number;
  duration: string;
  /** The IANA time zone the schedule is read in. */
  timezone: string;
  /** Whether a manual write (`converge reconcile`, `converge apply`) may go while this window blocks. */
  manual: boolean;
}

/** What the windows say at one instant. */
export interface WindowVerdict {
  /** Automatic writes (new commits, drift heal, prune) wait. */
  blocked: boolean;
  /** A manual write may go without --override-window (true when nothing blocks). */
  manualAllowed: boolean;
  /**
   * The window that blocks, by its index in the setting: the first open deny window, or, outside every allow window,
   * the allow window that opens first. Undefined when nothing blocks.
   */
  by?: { index: number; window: ChangeWindow; why: 'deny' | 'outside-allow' } | undefined;
  /** When automatic writes may go again (undefined: not blocked, or no end within the look-ahead). */
  until?: Date | undefined;
  /** The next instant any window opens or closes (undefined: none within the look-ahead). */
  nextChange?: Date | undefined;
}

/** How many spans or transitions are walked ahead at most (a window whose starts overlap may never end). */
const LOOK_AHEAD = 64;

/** The first start of `window` strictly after `t` (ms). */
function startAfter(window: ChangeWindow, t: number): number {
  return CronExpressionParser.parse(window.schedule, { currentDate: new Date(t), tz: window.timezone })
    .next()
    .getTime();
}

/** The latest start of `window` at or before `t` (ms); starts are on whole minutes. */
function startAtOrBefore(window: ChangeWindow, t: number): number {
  return CronExpressionParser.parse(window.schedule, { currentDate: new Date(t + 1), tz: window.timezone })
    .prev()
    .getTime();
}

/**
 * When `window`, open at `t`, closes: the end of the last of its spans that overlap or touch (each span is
 * [start, start + duration)); null when it is closed at `t`; undefined when it does not close within the look-ahead.
 */
export function windowEnd(window: ChangeWindow, t: number): number | null | undefined {
  let end = t;
  let open = false;
  for (let i = 0; i < LOOK_AHEAD; i += 1) {
    // The first start whose span reaches past `end`; a span that starts exactly at `end` continues the window.
    const first = startAfter(window, end - window.durationMs);
    if (first > end) return open ? end : null;
    // The latest start at or before `end` ends last (cron-parser's prev() skips a start in a DST gap, next() not).
    const latest = startAtOrBefore(window, end);
    end = (latest <= end ? Math.max(first, latest) : first) + window.durationMs;
    open = true;
  }
  return undefined;
}

/** Whether `window` is open at `t`. */
function isOpen(window: ChangeWindow, t: number): boolean {
  return startAfter(window, t - window.durationMs) <= t;
}

/** The blocking part of a verdict at `t`, without the look-ahead. */
function blockAt(windows: readonly ChangeWindow[], t: number): Omit<WindowVerdict, 'until' | 'nextChange'> {
  const open = windows.map((window) => isOpen(window, t));
  const denies = windows
    .map((window, index) => ({ window, index }))
    .filter(({ window, index }) => window.kind === 'deny' && open[index]);
  const first = denies[0];
  if (first) {
    // Deny wins over allow; a manual write goes only if every open deny window allows it.
    return { blocked: true, manualAllowed: denies.every(({ window }) => window.manual), by: { ...first, why: 'deny' } };
  }
  const allows = windows.map((window, index) => ({ window, index })).filter(({ window }) => window.kind === 'allow');
  if (allows.length === 0 || allows.some(({ index }) => open[index])) return { blocked: false, manualAllowed: true };
  // Outside every allow window: as Argo CD, a manual write goes if any allow window says manual.
  const opensFirst = allows.reduce((a, b) => (startAfter(b.window, t) < startAfter(a.window, t) ? b : a));
  return {
    blocked: true,
    manualAllowed: allows.some(({ window }) => window.manual),
    by: { ...opensFirst, why: 'outside-allow' },
  };
}

/** The next instant after `t` at which any window opens or closes (undefined: an always-open window only). */
function nextChangeAfter(windows: readonly ChangeWindow[], t: number): number | undefined {
  let next: number | undefined;
  for (const window of windows) {
    const end = windowEnd(window, t);
    const at = end === null ? startAfter(window, t) : end;
    if (at !== undefined && (next === undefined || at < next)) next = at;
  }
  return next;
}

/**
 * What the windows say at `now` (ms): Argo CD's rules. Inside any deny window, or outside every allow window when
 * there is one, automatic writes are blocked; a manual write may go only if every open deny window says manual (or,
 * outside the allow windows, one of them does). `until` is the first window boundary after which writes may go.
 */
export function windowVerdict(windows: readonly ChangeWindow[], now: number): WindowVerdict {
  if (windows.length === 0) return { blocked: false, manualAllowed: true };
  const verdict: WindowVerdict = blockAt(windows, now);
  const nextChange = nextChangeAfter(windows, now);
  if (nextChange !== undefined) verdict.nextChange = new Date(nextChange);
  if (!verdict.blocked) return verdict;
  let at = nextChange;
  for (let i = 0; at !== undefined && i < LOOK_AHEAD; i += 1) {
    if (!blockAt(windows, at).blocked) {
      verdict.until = new Date(at);
      break;
    }
    at = nextChangeAfter(windows, at);
  }
  return verdict;
}

/** `windows[0] (deny "0 22 * * *" for 2h, Europe/Berlin)`: one window in words. */
export function windowName(index: number, window: ChangeWindow): string {
  return `windows[${index}] (${window.kind} "${window.schedule}" for ${window.duration}, ${window.timezone})`;
}

/** When a blocked verdict ends, in words. */
function untilText(verdict: WindowVerdict): string {
  return verdict.until ? `until ${verdict.until.toISOString()}` : 'with no end in sight (its starts overlap)';
}

/**
 * One line on a blocked verdict: which window holds the writes, until when, and what to do. Undefined when nothing
 * blocks. `manualHint` names the command that writes anyway (`converge reconcile`, `converge apply`).
 */
export function windowHeldMessage(verdict: WindowVerdict, manualHint = 'converge reconcile'): string | undefined {
  if (!verdict.blocked || !verdict.by) return undefined;
  const { index, window, why } = verdict.by;
  const what =
    why === 'deny'
      ? `deny window ${windowName(index, window)} is open`
      : `outside every allow window (the next, ${windowName(index, window)}, opens)`;
  const manual = verdict.manualAllowed
    ? `"${manualHint}" writes now (the window allows manual writes)`
    : `"${manualHint} --override-window" writes now`;
  return `automatic writes wait: ${what} ${untilText(verdict)}; they are written when it ends, or ${manual}`;
}
