// What the compile pool and its worker threads send each other: the parse options, then batches of files' bytes in one buffer; results as structured clones.
import type { ManifestBytes } from '../core/manifest/compile.js';
import type { ManifestResult, ParseOptions } from '../core/manifest/parse.js';

/** A worker's first message: what every file it is sent is compiled with (the threads may start before it is known). */
export interface CompileSetup {
  parseOptions: ParseOptions;
}

/** A batch of files for a worker: their paths, and their bytes one after another in `buffer` (file i is offsets[i]..offsets[i+1]). */
export interface BatchRequest {
  id: number;
  files: string[];
  offsets: number[];
  buffer: ArrayBuffer;
}

/** A worker's answer: one result per file of the batch, in its order. */
export interface BatchResult {
  id: number;
  results: ManifestResult[];
}

/** Packs files into one buffer of their own (transferred to the worker, so their bytes are not copied a second time). */
export function packBatch(id: number, files: readonly ManifestBytes[]): BatchRequest {
  const offsets = [0];
  for (const file of files) offsets.push(offsets.at(-1)! + file.bytes.length);
  const packed = new Uint8Array(offsets.at(-1)!);
  files.forEach((file, index) => packed.set(file.bytes, offsets[index]));
  return { id, files: files.map((file) => file.file), offsets, buffer: packed.buffer };
}

/**
 * A file converge failed to compile (a fault of converge, not of the file): an error at its first line, never a crash.
 * `reason` names the failure without its message (which might quote the file, and a file may hold a literal secret).
 */
export function compileFailure(file: string, reason: string): ManifestResult {
  return {
    resources: [],
    blocked: [],
    diagnostics: [
      {
        severity: 'error',
        file,
        line: 1,
        column: 1,
        code: 'E_COMPILE',
        message: `converge could not compile this file (${reason}); its resources are unknown this run: run converge validate on it, and report the message if it repeats`,
      },
    ],
  };
}

/**
 * Makes a worker's answer share the strings this thread holds: a structured clone copies every string, so 10,000 files
 * with the same warning were 10,000 copies of its text, and each file's path one copy per resource and diagnostic.
 * Each diagnostic's message and code are taken from `seen` (the first of each text in one load), and every path equal
 * to the one this thread sent (`file`) is that string. The values are unchanged.
 */
export function shareStrings(result: ManifestResult, file: string, seen: Map<string, string>): void {
  const shared = (text: string): string => {
    const kept = seen.get(text);
    if (kept !== undefined) return kept;
    seen.set(text, text);
    return text;
  };
  for (const d of result.diagnostics) {
    if (d.file === file) d.file = file;
    d.message = shared(d.message);
    d.code = shared(d.code);
  }
  for (const r of [...result.resources, ...result.blocked]) if (r.location.file === file) r.location.file = file;
}
