// Masking secret values in text shown to people (the service's error answers, build and deploy logs): whole values only.

/**
 * A secret value shorter than this is too short to be masked safely: it stands alone in ordinary text by chance
 * (a masked "x" or "on" hides other words and shows where the value is), and it is easy to guess. The plan says so
 * once, at load, for each such secret (never printing the value).
 */
export const MIN_MASKED_LENGTH = 4;

/**
 * A value at least this long is masked wherever it appears, also inside a longer word: no ordinary word holds it by
 * chance, and a secret glued to other text (a URL, a header) must not show. A shorter value is masked only where it
 * stands as a value, so that a one-letter secret "x" does not turn "already exists" into "already e[redacted]ists".
 */
const MASKED_ANYWHERE_LENGTH = 8;

/** A character that continues a word: a letter, a digit or an underscore (any script). */
const WORD_CHARACTER = /^[\p{L}\p{N}_]$/u;

function isWordCharacter(character: string | undefined): boolean {
  return character !== undefined && WORD_CHARACTER.test(character);
}

/** The character of `text` that ends before `index`, and the one that starts at `index` (a surrogate pair is one). */
function characterBefore(text: string, index: number): string | undefined {
  if (index <= 0) return undefined;
  const low = text.charCodeAt(index - 1);
  return low >= 0xdc00 && low <= 0xdfff && index >= 2 ? text.slice(index - 2, index) : text[index - 1];
}

function characterAt(text: string, index: number): string | undefined {
  const point = text.codePointAt(index);
  return point === undefined ? undefined : String.fromCodePoint(point);
}

/**
 * Whether the occurrence of `value` at `index` stands as a value: no word continues across either of its ends (a
 * value that begins or ends with a character that is not a word character has no word to continue there).
 */
function standsAlone(text: string, index: number, value: string): boolean {
  if (value.length >= MASKED_ANYWHERE_LENGTH) return true;
  const joinsBefore = isWordCharacter(characterAt(value, 0)) && isWordCharacter(characterBefore(text, index));
  const joinsAfter =
    isWordCharacter(characterBefore(value, value.length)) && isWordCharacter(characterAt(text, index + value.length));
  return !joinsBefore && !joinsAfter;
}

/** `text` with `value` replaced wherever it stands as a value (see standsAlone). */
function maskOne(text: string, value: string, replacement: string): string {
  let out = '';
  let from = 0;
  for (let at = text.indexOf(value); at !== -1; at = text.indexOf(value, at + 1)) {
    if (at < from || !standsAlone(text, at, value)) continue;
    out += text.slice(from, at) + replacement;
    from = at + value.length;
  }
  return out + text.slice(from);
}

/**
 * `text` with each of `values` replaced by `replacement` where it stands as a value (a value of 8 characters or more:
 * wherever it appears), longest value first, so that a value inside another goes with it. Empty values are skipped.
 */
export function maskValues(text: string, values: ReadonlyArray<string | undefined>, replacement: string): string {
  const sorted = [...new Set(values)]
    .filter((v): v is string => v !== undefined && v.length > 0)
    .sort((a, b) => b.length - a.length);
  let out = text;
  for (const value of sorted) out = maskOne(out, value, replacement);
  return out;
}
