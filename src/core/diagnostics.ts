// Input problems as collected data with file:line:column (Terraform tfdiags style), never thrown.

export type Severity = 'error' | 'warning';

export interface Diagnostic {
  severity: Severity;
  /** Path of the manifest file, relative to the manifest directory, with forward slashes. */
  file: string;
  /** 1-based line and column of the offending node. */
  line: number;
  column: number;
  /** Plain message: what is wrong and how to fix it. Never holds a secret value. */
  message: string;
  /** Stable code, e.g. E_YAML, E_SCHEMA, E_UNKNOWN_FIELD, E_DUPLICATE, E_LITERAL_SECRET. */
  code: string;
}

/** `file:line:column: severity: message`, the one-line form used by validate and logs. */
export function formatDiagnostic(d: Omit<Diagnostic, 'code'>): string {
  return `${d.file}:${d.line}:${d.column}: ${d.severity}: ${d.message}`;
}

/** Stable ordering: file, line, column, message. */
export function sortDiagnostics(list: Diagnostic[]): Diagnostic[] {
  return [...list].sort(compareDiagnostics);
}

/** The order diagnostics are shown in: by file, line, column, then message. */
export function compareDiagnostics(
  a: Pick<Diagnostic, 'file' | 'line' | 'column' | 'message'>,
  b: Pick<Diagnostic, 'file' | 'line' | 'column' | 'message'>,
): number {
  return a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column || a.message.localeCompare(b.message);
}

/** Warnings for something of the tree not read: a file that vanished while read, a link out of the tree not followed. */
const UNREAD_CODES: ReadonlySet<string> = new Set(['E_FILE_VANISHED', 'W_LINK_OUTSIDE']);

/**
 * "b.yaml:3:1" for each file with an error (or not read: vanished while it was read, a link out of the tree not followed), at its first
 * one, in file order: given the loader's diagnostics, the files of the tree that fail to load
 * (docs/adopting-and-pruning.md, "What could not be read is unknown, never absent").
 */
export function failingFiles(list: readonly Diagnostic[]): string[] {
  const first = new Map<string, Diagnostic>();
  for (const d of sortDiagnostics([...list]))
    if ((d.severity === 'error' || UNREAD_CODES.has(d.code)) && !first.has(d.file)) first.set(d.file, d);
  return [...first.values()].map((d) => `${d.file}:${d.line}:${d.column}`);
}
