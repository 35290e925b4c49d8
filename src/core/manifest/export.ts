// An exported resource as manifest text (modeline, converge/adopt annotation), checked by the same parser validate uses.
import { stringify } from 'yaml';
import type { ExportedDocument } from '../kinds/export-names.js';
import { ADOPT_ANNOTATION } from './metadata-schema.js';
import { API_VERSION } from './schema.js';
import { parseManifestBytes } from './parse.js';
import { escapeVariables } from './variables.js';

/** The manifest text of `doc`, or why it would not validate (the first diagnostic: a live value the manifest schema refuses). */
export function renderExported(
  doc: ExportedDocument,
  schemaPath: string,
  file: string,
): { text: string } | { invalid: string } {
  const body = stringify(
    // A live "${" is written "$${", so it is read back as it is, not as a variable.
    {
      apiVersion: API_VERSION,
      kind: doc.kind,
      metadata: { name: doc.name, annotations: { [ADOPT_ANNOTATION]: 'true' } },
      spec: escapeVariables(doc.spec),
    },
    { lineWidth: 0 },
  );
  const env = doc.env.length > 0 ? `# Secrets are read from the environment: ${doc.env.join(', ')}.\n` : '';
  const text = `# yaml-language-server: $schema=${schemaPath}\n# Exported from the live service by converge export.\n${env}${body}`;
  const parsed = parseManifestBytes(file, new TextEncoder().encode(text), { allowLiteralSecrets: false });
  const error = parsed.diagnostics.find((d) => d.severity === 'error');
  if (error) return { invalid: `${error.message} (line ${error.line})` };
  return { text };
}
