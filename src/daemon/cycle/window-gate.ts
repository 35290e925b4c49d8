// Change windows in the daemon (docs/rollouts.md, "Change windows"): a reconcile's writes wait inside a blocking window (WindowHeld), a manual reconcile lets them through where the window allows, --override-window always; a timer reconciles when the window ends.
import { heldBack, type Outcome } from '../../core/decide.js';
import { windowHeldMessage, windowVerdict, type ChangeWindow, type WindowVerdict } from '../../core/windows.js';

/** What one reconcile's gate decided: the verdict, and whether its writes wait or go on an operator's word. */
export interface WindowDecision {
  verdict: WindowVerdict;
  /** The WindowHeld line of every write this reconcile decided (undefined: they go). */
  held?: string | undefined;
  /** The writes go although a window blocks: `converge reconcile --override-window` asked. */
  overridden?: boolean;
}

/**
 * The windows of the daemon's settings, and what the operator asked of the next reconcile (`converge reconcile`:
 * manual; `--override-window`). Keeps no decision between reconciles: each one's verdict is computed again from the
 * settings and Redis' clock, so a standby that takes over gates the same way (a kept --override-window request is
 * served by the new leader: src/store/operator-requests.ts).
 */
export class WindowGate {
  private manual = false;
  private override = false;
  /** The WindowHeld line of the last reconcile's decision (undefined: its writes went), for the answer to `converge reconcile`. */
  private lastHeld: string | undefined;
  /** The last verdict and until when it stands (it changes only when a window opens or closes): /status asks often. */
  private cached: { from: number; to: number; verdict: WindowVerdict } | undefined;

  constructor(
    private readonly windows: readonly ChangeWindow[],
    /** Asks for a reconcile in `ms` (the window's end); undefined: none waits (each call replaces the last). */
    private readonly atEnd: (ms: number | undefined) => void,
  ) {}

  /** Whether any window is configured. */
  get configured(): boolean {
    return this.windows.length > 0;
  }

  /** The next reconcile is an operator's (`converge reconcile`), with --override-window or not. */
  ask(override: boolean): void {
    this.manual = true;
    if (override) this.override = true;
  }

  /** Ends what the operator asked (after the reconcile that served it). */
  take(): void {
    this.manual = false;
    this.override = false;
  }

  /** Why the last reconcile's writes waited (a window blocks), or undefined when they went. */
  held(): string | undefined {
    return this.lastHeld;
  }

  /** The verdict at `now` (ms) alone, for /status and the log. */
  verdict(now: number): WindowVerdict {
    const cached = this.cached;
    if (cached && now >= cached.from && now < cached.to) return cached.verdict;
    const verdict = windowVerdict(this.windows, now);
    // No change within the look-ahead (a window whose starts overlap): read again a minute later.
    this.cached = { from: now, to: verdict.nextChange?.getTime() ?? now + 60_000, verdict };
    return verdict;
  }

  /**
   * What this reconcile may write at `now` (ms, Redis' clock): while a window blocks, a timer asks for the reconcile
   * at its end (so what waited is written at once, not at the next resync).
   */
  decide(now: number): WindowDecision {
    const decision = this.decision(now);
    this.lastHeld = decision.held;
    return decision;
  }

  private decision(now: number): WindowDecision {
    const verdict = this.verdict(now);
    if (!verdict.blocked) {
      this.atEnd(undefined);
      return { verdict };
    }
    // A little after the end: the verdict at the end itself is already open (windows are [start, end)).
    this.atEnd(verdict.until ? verdict.until.getTime() - now + 50 : undefined);
    if (this.override) return { verdict, overridden: true };
    if (this.manual && verdict.manualAllowed) return { verdict };
    return { verdict, held: windowHeldMessage(verdict) };
  }
}

/**
 * Gates one reconcile's decided writes (by key, updated in place): inside a blocking window each becomes WindowHeld;
 * on --override-window each is marked, so its history says who asked. No gate or no window: nothing changes.
 */
export function gateWindows(
  gate: WindowGate | undefined,
  now: number,
  outcomes: Map<string, Outcome>,
): WindowDecision | undefined {
  if (!gate?.configured) return undefined;
  const decision = gate.decide(now);
  for (const [key, outcome] of outcomes) {
    if (!outcome.write) continue;
    if (decision.held) outcomes.set(key, heldBack(outcome, 'WindowHeld', decision.held));
    else if (decision.overridden)
      outcomes.set(key, {
        ...outcome,
        write: { ...outcome.write, windowOverride: 'converge reconcile --override-window' },
      });
  }
  return decision;
}
