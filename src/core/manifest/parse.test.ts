// parseManifestBytes: the model they produce, and the guards (size, binary, depth, aliases).
import { describe, expect, it } from 'vitest';
import { MAX_MANIFEST_BYTES, invalidUtf8Offset } from './file-bytes.js';
import { parseManifestBytes, type ParseOptions } from './parse.js';

/** A file's text as the loader hands it over: its bytes. */
function parseManifestText(file: string, text: string, options: ParseOptions): ReturnType<typeof parseManifestBytes> {
  return parseManifestBytes(file, new TextEncoder().encode(text), options);
}

const STRICT = { allowLiteralSecrets: false };

function where(result: ReturnType<typeof parseManifestText>): string[] {
  return result.diagnostics.map((d) => `${d.line}:${d.column} ${d.severity} ${d.code} ${d.message}`);
}

describe('parseManifestText: documents to desired resources', () => {
  it('converts a codehost deployment with every spec field into the model', () => {
    const text = [
      'apiVersion: converge/v1',
      'kind: Deployment',
      'metadata:',
      '  name: support-agent',
      '  annotations: { converge/drift: report, team: support }',
      'spec:',
      '  source: codehost',
      '  repository: acme/support-agent',
      '  integration: acme',
      '  source_config:',
      '    build_on_push: true',
      '    deployment_type: dev',
      '    resource_spec: { min_scale: 1, max_scale: 4, cpu: 0.5 }',
      '  source_revision_config: { graph_config_path: langgraph.json }',
      '  secrets:',
      '    - name: OPENAI_API_KEY',
      '      valueFrom: { env: EXAMPLE_OPENAI_API_KEY }',
      '    - name: DB_PASSWORD',
      '      valueFrom:',
      '        file: /run/secrets/db',
      '',
    ].join('\n');
    const result = parseManifestText('apps/support.yaml', text, STRICT);
    expect(result.diagnostics).toEqual([]);
    expect(result.blocked).toEqual([]);
    expect(result.resources).toEqual([
      {
        kind: 'Deployment',
        name: 'support-agent',
        location: { file: 'apps/support.yaml', line: 4, column: 9 },
        suspend: false,
        driftPolicy: 'report',
        spec: {
          source: 'codehost',
          repository: 'acme/support-agent',
          integration: 'acme',
          source_config: {
            build_on_push: true,
            deployment_type: 'dev',
            resource_spec: { min_scale: 1, max_scale: 4, cpu: 0.5 },
          },
          source_revision_config: { graph_config_path: 'langgraph.json' },
          secrets: [
            { name: 'OPENAI_API_KEY', from: { env: 'EXAMPLE_OPENAI_API_KEY' } },
            { name: 'DB_PASSWORD', from: { file: '/run/secrets/db' } },
          ],
        },
        secretLocations: {
          OPENAI_API_KEY: { file: 'apps/support.yaml', line: 17, column: 25 },
          DB_PASSWORD: { file: 'apps/support.yaml', line: 20, column: 15 },
        },
        repositoryLocation: { file: 'apps/support.yaml', line: 8, column: 15 },
      },
    ]);
  });

  it('converts manual and MCP providers, and reads converge/suspend', () => {
    const text = `apiVersion: converge/v1
kind: OAuthProvider
metadata:
  name: slack
  annotations:
    converge/suspend: "true"
spec:
  name: Slack
  client_id: "123.456"
  client_secret: { valueFrom: { env: SLACK_SECRET } }
  auth_url: https://slack.com/oauth/v2/authorize
  token_url: https://slack.com/api/oauth.v2.access
  uses_pkce: true
  code_challenge_method: S256
  provider_type: slack
  token_endpoint_auth_method: client_secret_basic
  authorization_params: { scope: "chat:write" }
  allowed_redirect_uris: [https://agents.example.com/callback]
---
apiVersion: converge/v1
kind: OAuthProvider
metadata: { name: linear }
spec: { name: Linear, mcp_server_url: "https://mcp.linear.app/mcp" }
`;
    const result = parseManifestText('auth.yaml', text, STRICT);
    expect(result.diagnostics).toEqual([]);
    expect(result.resources).toEqual([
      {
        kind: 'OAuthProvider',
        name: 'slack',
        location: { file: 'auth.yaml', line: 4, column: 9 },
        suspend: true,
        spec: {
          mode: 'manual',
          name: 'Slack',
          client_id: '123.456',
          auth_url: 'https://slack.com/oauth/v2/authorize',
          token_url: 'https://slack.com/api/oauth.v2.access',
          client_secret: { env: 'SLACK_SECRET' },
          uses_pkce: true,
          code_challenge_method: 'S256',
          provider_type: 'slack',
          token_endpoint_auth_method: 'client_secret_basic',
          authorization_params: { scope: 'chat:write' },
          allowed_redirect_uris: ['https://agents.example.com/callback'],
        },
        secretLocations: { client_secret: { file: 'auth.yaml', line: 10, column: 38 } },
      },
      {
        kind: 'OAuthProvider',
        name: 'linear',
        location: { file: 'auth.yaml', line: 22, column: 19 },
        suspend: false,
        spec: { mode: 'mcp', name: 'Linear', mcp_server_url: 'https://mcp.linear.app/mcp' },
      },
    ]);
  });

  it('accepts literal secrets only when allowed, and keeps them as { value }', () => {
    const text = `apiVersion: converge/v1
kind: Deployment
metadata: { name: local-dev }
spec:
  source: internal_template
  secrets: [{ name: TOKEN, value: dev-only-value }]
`;
    expect(where(parseManifestText('a.yaml', text, STRICT))).toEqual([
      '6:35 error E_LITERAL_SECRET secret "TOKEN" has a literal value in the manifest; use valueFrom: { env: NAME } or { file: PATH } (or --allow-literal-secrets for local use only)',
    ]);
    const allowed = parseManifestText('a.yaml', text, { allowLiteralSecrets: true });
    expect(allowed.diagnostics).toEqual([]);
    expect(allowed.resources[0]?.kind === 'Deployment' && allowed.resources[0].spec.secrets).toEqual([
      { name: 'TOKEN', from: { value: 'dev-only-value' } },
    ]);
  });

  it('ignores empty documents and comment-only files', () => {
    expect(parseManifestText('a.yaml', '# nothing here\n', STRICT)).toEqual({
      resources: [],
      blocked: [],
      diagnostics: [],
    });
    expect(parseManifestText('a.yaml', '', STRICT)).toEqual({ resources: [], blocked: [], diagnostics: [] });
    const text =
      '---\n---\n# c\n---\napiVersion: converge/v1\nkind: Deployment\nmetadata: { name: a }\nspec: { source: internal_template }\n---\n~\n';
    const result = parseManifestText('a.yaml', text, STRICT);
    expect(result.diagnostics).toEqual([]);
    expect(result.resources.map((r) => r.name)).toEqual(['a']);
  });

  it('follows anchors and merge keys, and reports through them at the anchored node', () => {
    const text = `apiVersion: converge/v1
kind: Deployment
metadata: { name: merged }
spec:
  source: internal_template
  source_config:
    resource_spec:
      <<: &sizes { min_scale: 3, max_scale: 1 }
      cpu: 1
`;
    expect(where(parseManifestText('a.yaml', text, STRICT))).toEqual([
      '8:31 error E_SCHEMA spec.source_config.resource_spec.min_scale: min_scale (3) must not exceed max_scale (1)',
    ]);
  });

  it('reports every problem of a document in one pass, in line order', () => {
    const text = `apiVersion: converge/v1
kind: Deployment
metadata: { name: many }
spec:
  source: external_docker
  repository: acme/x
  source_config:
    resource_spec: { max_scale: -2, memroy_mb: 5 }
`;
    expect(where(parseManifestText('a.yaml', text, STRICT))).toEqual([
      "6:3 error E_SCHEMA spec.repository: is only for source codehost (this deployment's source is external_docker); remove it",
      '8:33 error E_SCHEMA spec.source_config.resource_spec.max_scale: must be >= 0 (got -2)',
      '8:37 error E_UNKNOWN_FIELD unknown field "memroy_mb" in spec.source_config.resource_spec; did you mean "memory_mb"?',
    ]);
  });

  it('does not report consequences of a typo twice', () => {
    const text = `apiVersion: converge/v1
kind: OAuthProvider
metadata: { name: typo }
spec:
  name: X
  clientid: abc
  auth_url: https://a.example.com/authorize
  token_url: https://a.example.com/token
`;
    expect(where(parseManifestText('a.yaml', text, STRICT))).toEqual([
      '6:3 error E_UNKNOWN_FIELD unknown field "clientid" in spec; did you mean "client_id"?',
    ]);
  });
});

describe('parse guards', () => {
  it('refuses a text larger than the cap with one diagnostic', () => {
    const text = `# ${'x'.repeat(MAX_MANIFEST_BYTES)}\n`;
    expect(where(parseManifestText('big.yaml', text, STRICT))).toEqual([
      '1:1 error E_TOO_LARGE file is larger than 1 MiB; a manifest file must be smaller (split it into several files)',
    ]);
  });

  it('counts bytes, not characters, against the cap', () => {
    const text = `# ${'é'.repeat(MAX_MANIFEST_BYTES / 2)}\n`;
    expect(text.length).toBeLessThan(MAX_MANIFEST_BYTES);
    expect(parseManifestText('big.yaml', text, STRICT).diagnostics.map((d) => d.code)).toEqual(['E_TOO_LARGE']);
  });

  it('finds the first byte that is not UTF-8', () => {
    expect(invalidUtf8Offset(new TextEncoder().encode('ok: é ✓ 😀'))).toBe(-1);
    expect(invalidUtf8Offset(Uint8Array.from([0x61, 0xc3]))).toBe(1);
    expect(invalidUtf8Offset(Uint8Array.from([0x61, 0x62, 0xed, 0xa0, 0x80]))).toBe(2);
    expect(invalidUtf8Offset(Uint8Array.from([0xc0, 0x80]))).toBe(0);
  });

  it('reports binary content at the first offending byte', () => {
    const bytes = Uint8Array.from([...new TextEncoder().encode('a: 1\nb: x'), 0xff, 0x0a, 0x03]);
    expect(where(parseManifestBytes('bin.yaml', bytes, STRICT))).toEqual([
      '2:5 error E_BINARY file is not valid UTF-8 and holds control bytes: it looks binary; manifests are UTF-8 YAML text',
    ]);
    expect(where(parseManifestText('nul.yaml', 'a: 1\n\0', STRICT))).toEqual([
      '2:1 error E_BINARY file holds a NUL byte: it looks binary; manifests are UTF-8 YAML text',
    ]);
  });

  it('tells text saved as Latin-1 or Windows-1252 from binary content: not UTF-8, re-save it as UTF-8', () => {
    const latin1 = Uint8Array.from([...new TextEncoder().encode('a: 1\nb: caf'), 0xe9, 0x0a, 0x09, 0x80, 0x0d, 0x0a]);
    const fix =
      "here; it looks like Latin-1 or Windows-1252 text; re-save it as UTF-8 (your editor's encoding setting, or iconv -f WINDOWS-1252 -t UTF-8)";
    expect(where(parseManifestBytes('latin1.yaml', latin1, STRICT))).toEqual([
      `2:7 error E_ENCODING file is not valid UTF-8: byte 0xE9 ("é" in Latin-1) ${fix}`,
    ]);
    // A Windows-1252 euro sign (0x80) is no Latin-1 letter: the byte alone is named.
    const euro = Uint8Array.from([...new TextEncoder().encode('price: 5 '), 0x80, 0x0a]);
    expect(where(parseManifestBytes('euro.yaml', euro, STRICT))).toEqual([
      `1:10 error E_ENCODING file is not valid UTF-8: byte 0x80 ${fix}`,
    ]);
  });

  it('reads a UTF-8 byte order mark as nothing', () => {
    const bytes = new TextEncoder().encode(
      '\uFEFFapiVersion: converge/v1\nkind: Deployment\nmetadata: { name: bom }\nspec: { source: internal_template }\n',
    );
    const result = parseManifestBytes('bom.yaml', bytes, STRICT);
    expect(result.diagnostics).toEqual([]);
    expect(result.resources.map((r) => r.name)).toEqual(['bom']);
  });

  it('refuses very deep nesting without overflowing the stack', () => {
    const depth = 200_000;
    const text = `a: ${'['.repeat(depth)}${']'.repeat(depth)}\n`;
    expect(where(parseManifestText('deep.yaml', text, STRICT))).toEqual([
      '1:67 error E_DEPTH nesting deeper than 64 levels; no manifest needs that (the whole file is ignored)',
    ]);
  });

  it('stops alias expansion ("billion laughs") and names where it starts', () => {
    const lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 10; i++)
      lines.push(
        `a${i}: &a${i} [${Array(10)
          .fill(`*a${i - 1}`)
          .join(', ')}]`,
      );
    const result = parseManifestText(
      'lol.yaml',
      `${lines.join('\n')}\nkind: Deployment\nmetadata: { name: lol }\n`,
      STRICT,
    );
    expect(where(result)).toEqual([
      '2:10 error E_ALIAS YAML aliases expand beyond the limit of 100 expansions (a "billion laughs"?); write the values out instead of reusing anchors so much',
    ]);
    expect(result.blocked.map((b) => b.name)).toEqual(['lol']);
  });
});
