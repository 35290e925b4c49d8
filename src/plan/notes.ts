// Fixed wording of the plan's own reasons (the kinds' wording is in src/core/kinds/notes.ts).

export const ORPHAN_REASON = 'live deployment not in any manifest; converge never deletes';

export const RELEASED_REASON =
  'no longer declared: converge applied it once, its manifest is gone, and converge stopped managing it; converge never deletes';

/** The note of a partial plan, in every format: what was planned, and what was not looked at. */
export function partialNote(targets: readonly string[]): string {
  return `partial plan (--target): only ${targets.join(', ')} ${targets.length === 1 ? 'is' : 'are'} planned; the other manifests and the live resources no manifest declares are not looked at, and nothing is pruned`;
}
