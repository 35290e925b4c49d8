// The last lines of a failed revision's build log, for wherever a failure is reported (apply --wait, status, the daemon).
import { ConvergeError } from '../core/errors.js';
import { BUILD_LOG_TAIL_LINES, tailLines } from '../core/log-lines.js';
import type { ServiceClient } from './client.js';

/** What a build log tail needs of the client: the build log endpoint. */
export type BuildLogReads = Pick<ServiceClient, 'buildLogs'>;

/** The lines (oldest first, masked), or why there are none; never a failure. */
export interface BuildLogTail {
  lines: string[];
  /** Why no lines could be read (the service lacks the endpoint, the read failed); absent when lines were read or the log is empty. */
  note?: string;
}

/**
 * The last BUILD_LOG_TAIL_LINES lines of the build log of `revisionId`, every value of `mask` (the deployment's declared
 * secret values) replaced. A service without the log endpoints gives no lines and a note (the client says so once);
 * a read that fails gives a note, never an exception: the failure being reported matters more than its log.
 */
export async function buildLogTail(
  client: BuildLogReads,
  deployment: { id: string },
  revisionId: string,
  mask: readonly string[],
): Promise<BuildLogTail> {
  try {
    const read = await client.buildLogs(deployment.id, revisionId, { order: 'desc', limit: BUILD_LOG_TAIL_LINES });
    if (read.outcome === 'found') return { lines: tailLines(read.page.logs, mask) };
    if (read.outcome === 'gone') return { lines: [], note: `the service no longer has revision ${revisionId}` };
    return { lines: [], note: 'the service has no build log endpoint' };
  } catch (error) {
    if (!(error instanceof ConvergeError)) throw error;
    return { lines: [], note: `the build log could not be read (${error.code})` };
  }
}
