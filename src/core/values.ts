// Value helpers for plan diffs: null-tolerant deep equality, set equality, null stripping, stable key order.
import { canonicalJson } from './hash.js';

/** True for null and undefined: a declared null never clears a stored value (docs/against-the-real-service.md §3), so it means "not declared". */
export function isAbsent(value: unknown): value is null | undefined {
  return value === null || value === undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Deep equality where an object property holding null equals a missing one
 * (the service echoes unset fields as null). Arrays compare in order.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (isAbsent(a) || isAbsent(b)) return isAbsent(a) && isAbsent(b);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (isPlainObject(a) || isPlainObject(b)) {
    if (!isPlainObject(a) || !isPlainObject(b)) return false;
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (!deepEqual(a[key], b[key])) return false;
    }
    return true;
  }
  return a === b;
}

/** Order-insensitive equality of two lists of objects (each compared by canonical JSON, nulls dropped). */
export function setEqual(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  const count = new Map<string, number>();
  for (const item of a) {
    const key = canonicalJson(stripNulls(item));
    count.set(key, (count.get(key) ?? 0) + 1);
  }
  for (const item of b) {
    const key = canonicalJson(stripNulls(item));
    const n = count.get(key);
    if (!n) return false;
    count.set(key, n - 1);
  }
  return true;
}

/** A copy without null/undefined object properties, at every depth. */
export function stripNulls<T>(value: T): T {
  if (Array.isArray(value)) return value.map(stripNulls) as T;
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (!isAbsent(v)) out[key] = stripNulls(v);
  }
  return out as T;
}

/** Position of each key in an `order` list, built once per list (the lists are module constants). */
const ranks = new WeakMap<readonly string[], ReadonlyMap<string, number>>();

function rankOf(order: readonly string[]): ReadonlyMap<string, number> {
  let rank = ranks.get(order);
  if (!rank) {
    rank = new Map(order.map((key, i) => [key, i]));
    ranks.set(order, rank);
  }
  return rank;
}

/** The declared (non-null) keys of an object, ordered as `order` lists them, unknown keys last in sorted order. */
export function declaredKeys(value: Record<string, unknown> | null | undefined, order: readonly string[]): string[] {
  if (!value) return [];
  const rank = rankOf(order);
  const known: string[] = [];
  const extra: string[] = [];
  // The object's own keys (a handful), not every key of `order` (up to 40 for resource_spec).
  for (const key of Object.keys(value)) {
    if (isAbsent(value[key])) continue;
    if (rank.has(key)) known.push(key);
    else extra.push(key);
  }
  sortByRank(known, rank);
  return extra.length === 0 ? known : [...known, ...extra.sort()];
}

/**
 * Insertion sort by rank, in place: the lists are a handful of keys, most often in order already, and this runs for
 * every field of every deployment at each reconcile; Array.prototype.sort allocates a work array per call, which at
 * 10,000 deployments was the largest allocation of a resync (docs/performance.md).
 */
function sortByRank(keys: string[], rank: ReadonlyMap<string, number>): void {
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    const at = rank.get(key)!;
    let j = i - 1;
    while (j >= 0 && rank.get(keys[j]!)! > at) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = key;
  }
}

/** Plain code-unit comparison: deterministic whatever the locale. */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}

/** An object's value or null, for `before` of a FieldChange. */
export function orNull(value: unknown): unknown {
  return isAbsent(value) ? null : value;
}
