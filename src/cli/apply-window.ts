// `converge apply` in a change window: stops before writing, or writes where the window allows manual writes or with --override-window (docs/rollouts.md, "Change windows").
import type { Outcome } from '../core/decide.js';
import { windowName, windowVerdict, type ChangeWindow } from '../core/windows.js';

/** apply stopped before writing because a change window blocks writes (docs/commands.md). */
export const WINDOW_HELD_EXIT = 4;

/** The command whose override the history records on each write it let through. */
const OVERRIDE = 'converge apply --override-window';

/** What the windows let apply do now: write (`go`), write on the override (`overridden`, logged), or stop (`held`). */
export type ApplyWindow = { go: true } | { overridden: string } | { held: string };

/**
 * The windows' word on an apply at `now` (ms): nothing blocks, or the blocking window allows manual writes: go. Else
 * `--override-window` writes anyway, and without it apply stops with one line naming the window, its end and the flag.
 */
export function applyWindow(windows: readonly ChangeWindow[], now: number, override: boolean): ApplyWindow {
  const verdict = windowVerdict(windows, now);
  if (!verdict.blocked || !verdict.by || verdict.manualAllowed) return { go: true };
  const { index, window, why } = verdict.by;
  const until = verdict.until ? `until ${verdict.until.toISOString()}` : 'with no end in sight';
  const what =
    why === 'deny'
      ? `deny window ${windowName(index, window)} is open ${until}`
      : `outside every allow window ${until} (the next: ${windowName(index, window)})`;
  if (override) return { overridden: `change window overridden (--override-window): ${what}; writing anyway` };
  return {
    held: `Apply stopped before writing: ${what} and allows no manual writes; nothing was written. Run "${OVERRIDE}" to write now, or apply after it ends (a daemon writes it then).`,
  };
}

/** Marks each decided write as let through by the override (its history entry says who asked). */
export function markOverridden(outcomes: Map<string, Outcome>): void {
  for (const [key, outcome] of outcomes)
    if (outcome.write) outcomes.set(key, { ...outcome, write: { ...outcome.write, windowOverride: OVERRIDE } });
}
