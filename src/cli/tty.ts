// Terminal facts: whether to colour output (a TTY, and NO_COLOR unset), and the one-line progress display on stderr.
import type { CommandIo } from './command.js';

export function useColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '' && env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true;
}

export interface Progress {
  show(text: string): void;
  clear(): void;
  /** Writes a line to `stream` without tearing the progress line. */
  write(stream: NodeJS.WritableStream, text: string): void;
}

/** On a TTY, one updating line on stderr; otherwise nothing (plain result lines carry the progress). */
export function progressLine(io: { stderr: CommandIo['stderr'] }): Progress {
  const tty = io.stderr.isTTY === true;
  let current = '';
  return {
    show(text) {
      if (!tty) return;
      current = text;
      io.stderr.write(`\r\x1b[K${text}`);
    },
    clear() {
      if (tty && current) io.stderr.write('\r\x1b[K');
      current = '';
    },
    write(stream, text) {
      if (tty && current) io.stderr.write('\r\x1b[K');
      stream.write(text);
      if (tty && current) io.stderr.write(current);
    },
  };
}
