// `converge export --out BASE --overlay-out DIR`: the overlay that makes the base (with this environment's variables) equal the live workspace.
import { stringify } from 'yaml';
import type { ExportedDocument } from '../../core/kinds/export-names.js';
import { diffPatch, OVERLAY_ANNOTATION } from '../../core/manifest/overlay.js';
import { ADOPT_ANNOTATION } from '../../core/manifest/metadata-schema.js';
import { API_VERSION } from '../../core/manifest/schema.js';
import { escapeVariables } from '../../core/manifest/variables.js';
import { resourceKey } from '../../core/model.js';

/** One overlay file to write: its path below the overlay directory and its text. */
interface OverlayFile {
  file: string;
  text: string;
  /** patch: a resource of the base whose live state differs; add: a live resource the base does not declare. */
  kind: 'patch' | 'add';
}

/** A spec without its secrets: the service never returns their values, so the base's references are kept as they are. */
function withoutSecrets(spec: unknown): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...((spec as Record<string, unknown> | undefined) ?? {}) };
  delete copy.secrets;
  delete copy.client_secret;
  return copy;
}

/**
 * The overlay of one environment, from its live documents and the base's manifest data (variables substituted, earlier
 * overlays merged), by resource key: a merge patch of `spec` for each resource whose live state differs (secrets are not
 * compared), a whole document annotated converge/overlay: add for a live resource the base lacks, nothing for one equal
 * to the base or one the workspace lacks.
 */
export function overlayFiles(
  live: ReadonlyArray<{ doc: ExportedDocument; file: string }>,
  base: ReadonlyMap<string, unknown>,
): OverlayFile[] {
  const files: OverlayFile[] = [];
  for (const { doc, file } of live) {
    const declared = base.get(resourceKey(doc.kind, doc.name)) as { spec?: unknown } | undefined;
    if (!declared) {
      const annotations = { [OVERLAY_ANNOTATION]: 'add', [ADOPT_ANNOTATION]: 'true' };
      const body = stringify(
        {
          apiVersion: API_VERSION,
          kind: doc.kind,
          metadata: { name: doc.name, annotations },
          spec: escapeVariables(doc.spec),
        },
        { lineWidth: 0 },
      );
      const env = doc.env.length > 0 ? `# Secrets are read from the environment: ${doc.env.join(', ')}.\n` : '';
      files.push({
        file,
        kind: 'add',
        text: `# Exported by converge export --overlay-out: live in this workspace, not in the base.\n${env}${body}`,
      });
      continue;
    }
    const patch = diffPatch(withoutSecrets(declared.spec), withoutSecrets(doc.spec));
    if (patch === undefined) continue;
    const body = stringify(
      { kind: doc.kind, metadata: { name: doc.name }, spec: escapeVariables(patch) },
      { lineWidth: 0 },
    );
    files.push({
      file,
      kind: 'patch',
      text: `# Exported by converge export --overlay-out: where this workspace differs from the base (JSON merge patch).\n${body}`,
    });
  }
  return files;
}
