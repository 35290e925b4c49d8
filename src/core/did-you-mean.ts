// Did-you-mean, pure: the edit distance of two words and the known word a typo most likely meant.

/** Edit distance of two strings (insertions, deletions, substitutions). */
export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/**
 * `; did you mean "x"?` when `word` is near one of `known`, else '': a field-name match (closest), or a name at most
 * two edits away (a third of a longer one), as the CLI suggests commands. --target and overlay targets use it.
 */
export function didYouMean(word: string, known: readonly string[]): string {
  let guess = closest(word, known);
  if (!guess) {
    const ranked = known
      .map((name) => ({ name, distance: editDistance(word, name) }))
      .sort((a, b) => a.distance - b.distance);
    const best = ranked[0];
    if (best && best.distance <= Math.max(2, Math.floor(word.length / 3))) guess = best.name;
  }
  return guess ? `; did you mean "${guess}"?` : '';
}

/** The known key a typo most likely meant, if any is close. */
export function closest(word: string, known: readonly string[]): string | undefined {
  const squash = (s: string) => s.toLowerCase().replace(/[-_]/g, '');
  const exact = known.find((k) => squash(k) === squash(word));
  if (exact) return exact;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= Math.max(1, Math.min(3, Math.floor(word.length / 3))) ? best : undefined;
}
