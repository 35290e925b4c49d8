// Grouping a list by a key in one pass: each group an array pushed to, never copied (a copy per item is quadratic at 10,000).

/** The items of each key, in the order the keys first appear and, within a group, the order given. */
export function groupBy<T, K>(items: Iterable<T>, keyOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
