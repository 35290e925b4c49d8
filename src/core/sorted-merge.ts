// Merges a few sorted entries into a long sorted list without sorting it again (a targeted reconcile's changes and diagnostics into the last plan's).

/** `sorted` (ordered by `compare`) with each of `added` inserted at its place: a binary search each, one copy of the list. */
export function insertSorted<T>(sorted: readonly T[], added: readonly T[], compare: (a: T, b: T) => number): T[] {
  const out = [...sorted];
  for (const item of [...added].sort(compare)) {
    let low = 0;
    let high = out.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (compare(out[mid]!, item) <= 0) low = mid + 1;
      else high = mid;
    }
    out.splice(low, 0, item);
  }
  return out;
}
