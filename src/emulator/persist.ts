// Reads the state file and writes it atomically (temp file, fsync, rename, fsync of the directory), coalescing bursts.
import { randomBytes } from 'node:crypto';
import { open, readFile, rename, unlink } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { stringify as stringifyYaml } from 'yaml';
import { EmulatorStateError } from './state.js';

/** Reads the state file's text; null when it does not exist yet. */
export async function readStateText(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    throw new EmulatorStateError(`state file ${path}: cannot be read (${code ?? 'error'})`, { cause: error });
  }
}

/** JSON for .json files, YAML otherwise. */
export function serializeState(path: string, state: unknown): string {
  if (extname(path).toLowerCase() === '.json') return `${JSON.stringify(state, null, 2)}\n`;
  return stringifyYaml(state, { lineWidth: 0 });
}

/**
 * Writes `text` to `path` so that a crash leaves either the old file or the new one, never a torn one:
 * write a temp file beside it, fsync it, rename it over the target, fsync the directory.
 */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  const dir = dirname(path);
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } catch (error) {
    await handle.close();
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await handle.close();
  try {
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  const dirHandle = await open(dir, 'r');
  try {
    await dirHandle.sync();
  } finally {
    await dirHandle.close();
  }
}

export interface Persister {
  /** Resolves once a write that includes every change made before this call has finished. */
  schedule(): Promise<void>;
  /** Waits for writes in flight (and one more if changes are waiting). */
  flush(): Promise<void>;
}

/**
 * At most one write in flight; changes made during a write are covered by exactly one following write,
 * so a burst of N changes costs at most two writes, and every caller learns when its change is on disk.
 * With `version` (bumped on every change), a caller whose changes the write in flight already holds
 * waits for that write instead of scheduling another.
 */
export function createPersister(path: string, currentState: () => unknown, version?: () => number): Persister {
  let writing: Promise<void> | null = null;
  let writingVersion: number | undefined;
  let next: Promise<void> | null = null;

  function writeOnce(): Promise<void> {
    const text = serializeState(path, currentState());
    // Read after the state: taking it may itself change the store (builds that finished are advanced).
    writingVersion = version?.();
    return writeFileAtomic(path, text);
  }

  function schedule(): Promise<void> {
    if (next) return next;
    if (writing && version && writingVersion === version()) return writing;
    if (!writing) {
      writing = writeOnce().finally(() => {
        writing = null;
      });
      return writing;
    }
    const after = writing.catch(() => undefined);
    next = after.then(() => {
      next = null;
      return schedule();
    });
    return next;
  }

  async function flush(): Promise<void> {
    while (writing || next) await (next ?? writing)!.catch(() => undefined);
  }

  return { schedule, flush };
}
