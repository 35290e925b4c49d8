// The build log tail of a failed revision as the CLI prints it under the failure (apply --wait, status).
import type { DesiredResource } from '../core/model.js';
import { resolveDesiredSecrets } from '../secrets/resolve.js';
import { buildLogTail, type BuildLogReads } from '../service/build-log-tail.js';

/** The values to mask in a deployment's logs: every secret its manifest declares that resolves here. Never printed. */
export function maskOf(resource: DesiredResource | undefined, env: NodeJS.ProcessEnv): string[] {
  if (!resource) return [];
  return Object.values(resolveDesiredSecrets(resource, env).values);
}

/** Lines to print under a failed revision: a header and the build log's last lines, indented; or the one note why there are none. */
export async function failedBuildLines(
  client: BuildLogReads,
  deploymentId: string,
  revisionId: string,
  resource: DesiredResource | undefined,
  env: NodeJS.ProcessEnv,
  indent = '      ',
): Promise<string[]> {
  const tail = await buildLogTail(client, { id: deploymentId }, revisionId, maskOf(resource, env));
  if (tail.lines.length > 0)
    return [
      `${indent}last build log lines of revision ${revisionId}:`,
      ...tail.lines.map((line) => `${indent}| ${line}`),
    ];
  return tail.note ? [`${indent}(no build log: ${tail.note})`] : [];
}
