// Fields the service needs for one write that a manifest may leave out (a live deployment adopted as it is may lack them): only that write is blocked.
import type { DeploymentSpec, ListedDeployment } from '../../model.js';
import type { PatchDeploymentRequest } from '../../wire/schema.js';
import { isAbsent } from '../../values.js';

/** How to give graph_config_path, said by the plan's blocked write and by validate's warning. */
export const GRAPH_CONFIG_HINT =
  'add source_revision_config.graph_config_path (the path of the graph configuration file, e.g. langgraph.json)';

/**
 * Why the write the plan would make lacks a field the service requires (docs/against-the-real-service.md §2), or none:
 * `graph_config_path` on a create of a codehost deployment; and on every write to an internal_source deployment that
 * holds a tarball or is sent one (the PATCH right after its create, a new tarball, or any other write, since the
 * service may check what the deployment holds), unless the manifest or the live deployment has it. A live deployment
 * without it plans as it is; only such a write is blocked, so a manifest exported from it is valid and plans clean.
 */
export function missingForWrite(
  spec: DeploymentSpec,
  live: ListedDeployment | undefined,
  body: PatchDeploymentRequest,
): string[] {
  const declared = spec.source_revision_config ?? {};
  if (!isAbsent(declared.graph_config_path)) return [];
  if (spec.source === 'codehost' && !live) {
    return [
      `creating it needs source_revision_config.graph_config_path, which the manifest leaves out (the service requires it to create a deployment of source codehost); ${GRAPH_CONFIG_HINT}`,
    ];
  }
  if (spec.source !== 'internal_source' || !isAbsent(live?.source_revision_config.graph_config_path)) return [];
  const sent = live ? body.source_revision_config?.source_tarball_path : declared.source_tarball_path;
  if (isAbsent(sent) && isAbsent(live?.source_revision_config.source_tarball_path)) return [];
  const write = live ? 'writing it' : 'creating it (its source_tarball_path is patched right after the create)';
  return [
    `${write} needs source_revision_config.graph_config_path, which the manifest leaves out and the live deployment lacks (the service requires it with a source_tarball_path, and may refuse any write to a deployment holding one without it); ${GRAPH_CONFIG_HINT}`,
  ];
}
