// A manifest file's bytes to its text: a file too large, binary or not UTF-8 is refused with one diagnostic.
import type { Diagnostic } from '../diagnostics.js';

/** Files larger than this are refused whole (one diagnostic). */
export const MAX_MANIFEST_BYTES = 1024 * 1024;
/** The E_TOO_LARGE message, for a file refused by its size here or before it is read whole (src/source). */
export const TOO_LARGE_MESSAGE = `file is larger than ${MAX_MANIFEST_BYTES / 1024 / 1024} MiB; a manifest file must be smaller (split it into several files)`;
/** 1-based line and column of a character offset in `text` (for problems found before YAML parsing). */
function positionInText(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

/** Offset of the first byte that breaks UTF-8, or -1 when `bytes` is valid UTF-8. */
export function invalidUtf8Offset(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const need =
      b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (need < 0) return i;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
    }
    if (need === 2 && ((b === 0xe0 && bytes[i + 1]! < 0xa0) || (b === 0xed && bytes[i + 1]! > 0x9f))) return i;
    if (need === 3 && ((b === 0xf0 && bytes[i + 1]! < 0x90) || (b === 0xf4 && bytes[i + 1]! > 0x8f))) return i;
    i += need + 1;
  }
  return -1;
}

/** A control byte no text file holds: every C0 one but tab, line feed, form feed and carriage return; and DEL. */
function isControlByte(byte: number): boolean {
  return (byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0c && byte !== 0x0d) || byte === 0x7f;
}

/**
 * The message for text that is not UTF-8 (no NUL, no control byte): most likely saved as Latin-1 or Windows-1252, whose
 * accented letters are single bytes; `byte` is the first that breaks UTF-8, shown as the letter it is in Latin-1.
 */
function notUtf8Message(byte: number): string {
  const hex = `0x${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  const shown = byte >= 0xa1 ? ` ("${String.fromCharCode(byte)}" in Latin-1)` : '';
  return `file is not valid UTF-8: byte ${hex}${shown} here; it looks like Latin-1 or Windows-1252 text; re-save it as UTF-8 (your editor's encoding setting, or iconv -f WINDOWS-1252 -t UTF-8)`;
}

/** A manifest file's text, or the one diagnostic that refuses it: too large, binary, or not UTF-8. */
export function manifestText(file: string, bytes: Uint8Array): { text: string } | { refused: Diagnostic } {
  const refused = (code: string, message: string, line = 1, column = 1): { refused: Diagnostic } => ({
    refused: { severity: 'error', file, line, column, message, code },
  });
  if (bytes.length > MAX_MANIFEST_BYTES) return refused('E_TOO_LARGE', TOO_LARGE_MESSAGE);
  const nul = bytes.indexOf(0);
  // The usual file: no NUL, and the native decoder finds it valid UTF-8 (the same rule as invalidUtf8Offset).
  const text = nul < 0 ? decodeValid(bytes) : undefined;
  if (text !== undefined) return { text };
  const bad = invalidUtf8Offset(bytes);
  const first = [nul, bad].filter((o) => o >= 0).sort((a, b) => a - b)[0];
  if (first !== undefined) {
    const prefix = new TextDecoder('utf-8').decode(bytes.subarray(0, first));
    const { line, column } = positionInText(prefix, prefix.length);
    if (nul < 0 && !bytes.some(isControlByte)) {
      return refused('E_ENCODING', notUtf8Message(bytes[first]!), line, column);
    }
    const what = first === nul ? 'holds a NUL byte' : 'is not valid UTF-8 and holds control bytes';
    return refused('E_BINARY', `file ${what}: it looks binary; manifests are UTF-8 YAML text`, line, column);
  }
  return { text: new TextDecoder('utf-8').decode(bytes) };
}

const VALID_UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The text of bytes that are valid UTF-8 (a byte order mark dropped, as TextDecoder does); undefined when they are not. */
function decodeValid(bytes: Uint8Array): string | undefined {
  try {
    return VALID_UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}
