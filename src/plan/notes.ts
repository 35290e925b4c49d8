// Fixed wording of the plan's own reasons (the kinds' wording is in src/core/kinds/notes.ts).

export const ORPHAN_REASON = 'live deployment not in any manifest; converge never deletes';

export const RELEASED_REASON = 'no longer declared: converge applied it once, its manifest is gone, and converge stopped managing it; converge never deletes';
