// A command that reads a directory runs with it listed ahead: the walk and the compile threads start while the command's own modules load (src/observe/listing-ahead.ts), and stop on every way out.
import type { ListingAhead } from '../../observe/listing-ahead.js';

/**
 * Runs `run` with the directory `dir` listed ahead (none when `dir` is undefined: the command reads no one directory).
 * The listing is closed on every way out, a failed import of the command's module included: threads left running would
 * keep the process alive.
 */
export async function withListingAhead<T>(
  dir: string | undefined,
  run: (ahead: ListingAhead | undefined) => Promise<T>,
): Promise<T> {
  const ahead = dir ? new (await import('../../observe/listing-ahead.js')).ListingAhead(dir) : undefined;
  try {
    return await run(ahead);
  } finally {
    await ahead?.close();
  }
}
