// JSON Schema of manifests (z.toJSONSchema), for `converge schema` and editors' yaml-language-server.
import { z } from 'zod';
import { Manifest } from './schema.js';

/** Where the committed copy lives, relative to the repository root. */
export const SCHEMA_FILE = 'schema/converge.schema.json';

/** The JSON Schema (draft 2020-12) of one manifest document, Deployment or OAuthProvider. */
export function manifestJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(Manifest, { io: 'input', unrepresentable: 'any', reused: 'inline' }) as Record<
    string,
    unknown
  >;
  const { $schema, ...rest } = generated;
  return {
    $schema,
    title: 'converge manifest',
    description:
      'One converge/v1 manifest document: a Deployment or an OAuthProvider of the Deployment and OAuth Provider Service. ' +
      'Unknown fields are errors; secret values come from valueFrom.env or valueFrom.file.',
    ...rest,
  };
}

/** The schema as the text `converge schema` prints and schema/converge.schema.json holds. */
export function manifestJsonSchemaText(): string {
  return `${JSON.stringify(manifestJsonSchema(), null, 2)}\n`;
}
