// `apply` on a terminal: after the plan, one question; only "yes" lets it write (docs/commands.md, "Approving on a terminal").
import { createInterface } from 'node:readline';
import type { CommandIo } from './command.js';
import { EMBEDDED } from './target.js';

/** What the question came to: "yes", or how it ended without it (another answer, end of input, Ctrl-C or a signal). */
export type Answer = { approved: true } | { approved: false; ended: 'answer' | 'eof' | 'interrupt' };

/** The one line apply prints when the question was not answered "yes". */
export const CANCELLED_LINE = 'Apply cancelled: nothing was written.';

/** What decides whether apply asks. */
export interface ApprovalCase {
  /** --auto-approve (CONVERGE_AUTO_APPROVE, auto_approve). */
  autoApprove: boolean;
  /** The text output: JSON is read by a program, which is never asked. */
  text: boolean;
  /** apply --plan FILE: a saved plan is the plan a person reviewed, never asked about again. */
  saved: boolean;
  /** Jobs the apply would enqueue (writes and deletes): none, nothing to approve. */
  changes: number;
}

/**
 * True when apply asks before it writes: a person at a terminal (stdin and stdout both TTYs), the text output, a plan
 * made now from DIR with something to write or delete, and no --auto-approve. CI, pipes and a daemon are never asked.
 */
export function asksApproval(io: Pick<CommandIo, 'stdin' | 'stdout'>, c: ApprovalCase): boolean {
  if (c.autoApprove || !c.text || c.saved || c.changes === 0) return false;
  // stdout first: process.stdin is opened only when the answer could be read from a terminal.
  return io.stdout.isTTY === true && io.stdin?.isTTY === true;
}

/** The question, naming the service the changes go to: `Apply these changes to URL? Only "yes" is accepted: `. */
export function approvalQuestion(apiUrl: string): string {
  const where = apiUrl === EMBEDDED ? 'the embedded emulator' : apiUrl;
  return `Apply these changes to ${where}? Only "yes" is accepted: `;
}

/**
 * Asks `question` on the terminal and reads one line (node:readline). Only "yes" (blanks around it ignored) approves;
 * any other line, the end of input (Ctrl-D), Ctrl-C and an aborted `signal` (SIGINT or SIGTERM to the process) do not.
 */
export function askApproval(
  io: Pick<CommandIo, 'stdin' | 'stdout'>,
  question: string,
  signal?: AbortSignal,
): Promise<Answer> {
  const input = io.stdin;
  if (!input) return Promise.resolve({ approved: false, ended: 'eof' });
  if (signal?.aborted) return Promise.resolve({ approved: false, ended: 'interrupt' });
  return new Promise((resolve) => {
    const rl = createInterface({ input, output: io.stdout, terminal: true });
    let done = false;
    const end = (answer: Answer): void => {
      if (done) return;
      done = true;
      signal?.removeEventListener('abort', interrupted);
      rl.close();
      resolve(answer);
    };
    const interrupted = (): void => end({ approved: false, ended: 'interrupt' });
    // In the terminal's raw mode Ctrl-C reaches readline as a key, not the process as SIGINT.
    rl.on('SIGINT', interrupted);
    rl.on('close', () => end({ approved: false, ended: 'eof' }));
    signal?.addEventListener('abort', interrupted, { once: true });
    rl.question(question, (line) =>
      end(line.trim() === 'yes' ? { approved: true } : { approved: false, ended: 'answer' }),
    );
  });
}

/**
 * The approval step of `apply DIR`: true to go on (approved, or nobody to ask); false after printing the cancelled line,
 * when the apply then ends with exit 1, having enqueued nothing and sent the service nothing but reads.
 */
export async function approveApply(
  io: Pick<CommandIo, 'stdin' | 'stdout'>,
  c: ApprovalCase & { apiUrl: string; signal?: AbortSignal },
): Promise<boolean> {
  if (!asksApproval(io, c)) return true;
  const answer = await askApproval(io, approvalQuestion(c.apiUrl), c.signal);
  if (answer.approved) return true;
  // After Ctrl-C or Ctrl-D the cursor still stands after the question.
  io.stdout.write(`${answer.ended === 'answer' ? '' : '\n'}${CANCELLED_LINE}\n`);
  return false;
}
