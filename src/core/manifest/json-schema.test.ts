// The JSON Schema: what it says, that the committed copy is current, and that every example points at it.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SCHEMA_FILE, manifestJsonSchema, manifestJsonSchemaText } from './json-schema.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MODELINE = /^# yaml-language-server: \$schema=(\S+)$/;

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(name) ? [path] : [];
  });
}

type Json = Record<string, any>;

describe('manifestJsonSchema', () => {
  it('is the committed schema/converge.schema.json (regenerate: npm run build && node dist/cli/main.js schema > schema/converge.schema.json)', () => {
    expect(readFileSync(join(ROOT, SCHEMA_FILE), 'utf8')).toBe(manifestJsonSchemaText());
  });

  it('describes both kinds, strictly', () => {
    const schema = manifestJsonSchema() as Json;
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.title).toBe('converge manifest');
    const [deployment, provider] = schema.oneOf as Json[];
    expect(deployment!.properties.kind.const).toBe('Deployment');
    expect(provider!.properties.kind.const).toBe('OAuthProvider');
    for (const kind of [deployment!, provider!]) {
      expect(kind.required).toEqual(['apiVersion', 'kind', 'metadata', 'spec']);
      expect(kind.additionalProperties).toBe(false);
      expect(kind.properties.apiVersion.const).toBe('converge/v1');
      expect(kind.properties.metadata.properties.name.pattern).toBe('^[a-z][a-z0-9-]*$');
      expect(kind.properties.metadata.properties.name.maxLength).toBe(63);
      expect(kind.properties.spec.additionalProperties).toBe(false);
    }
    const spec = deployment!.properties.spec;
    expect(spec.properties.source.enum).toEqual([
      'codehost',
      'external_docker',
      'internal_docker',
      'internal_source',
      'internal_template',
    ]);
    expect(spec.properties.source_revision_config.properties.repo_commit_sha).toBeUndefined();
    expect(spec.properties.secrets.items.properties.valueFrom.oneOf).toEqual([
      { required: ['env'] },
      { required: ['file'] },
    ]);
    expect(provider!.properties.spec.oneOf.map((o: Json) => o.title)).toEqual(['manual', 'discovered']);
    expect(provider!.properties.spec.properties.mcp_server_url.pattern).toBe('^https?://');
  });

  it('is pointed at by the modeline of every example manifest', () => {
    const files = yamlFiles(join(ROOT, 'examples/manifests'));
    expect(files.length).toBeGreaterThanOrEqual(6);
    for (const file of files) {
      const first = readFileSync(file, 'utf8').split('\n')[0]!;
      const match = MODELINE.exec(first);
      expect(match, `${file} starts with the yaml-language-server modeline`).not.toBeNull();
      expect(resolve(dirname(file), match![1]!), file).toBe(join(ROOT, SCHEMA_FILE));
    }
  });
});
