// Expected diagnostics of every file of the broken-manifest corpus (test/fixtures/bad), shared by the loader and daemon suites.

export type Expected = [line: number, column: number, code: string, text: string];

/** file -> every diagnostic it must produce (in order), and the name it blocks (null: nothing can be named). */
export const CORPUS: Record<string, { diagnostics: Expected[]; blocks: string | null }> = {
  'alias-cycle.yaml': {
    diagnostics: [[11, 12, 'E_ALIAS', 'alias *loop is inside the node its anchor names']],
    blocks: 'alias-cycle',
  },
  'annotation-bad-drift.yaml': {
    diagnostics: [[6, 21, 'E_SCHEMA', 'metadata.annotations["converge/drift"]: must be "heal" or "report"']],
    blocks: 'bad-drift',
  },
  'annotation-unknown-converge.yaml': {
    diagnostics: [[7, 5, 'E_SCHEMA', 'unknown converge annotation "converge/suspended"']],
    blocks: 'unknown-annotation',
  },
  'annotation-unquoted-bool.yaml': {
    diagnostics: [[6, 23, 'E_SCHEMA', 'annotation values are strings: quote it, e.g. "true"']],
    blocks: 'unquoted-bool',
  },
  'bad-enum-provider-type.yaml': {
    diagnostics: [
      [10, 18, 'E_SCHEMA', 'spec.provider_type: "google" is not one of "microsoft", "salesforce", "slack", "x"'],
    ],
    blocks: 'bad-provider-type',
  },
  'bad-enum-source.yaml': {
    diagnostics: [[6, 11, 'E_SCHEMA', 'spec.source: "github" is not one of "codehost", "external_docker"']],
    blocks: 'bad-enum-source',
  },
  'bad-enum-token-auth.yaml': {
    diagnostics: [[10, 31, 'E_SCHEMA', 'spec.token_endpoint_auth_method: "client_secret_jwt" is not one of']],
    blocks: 'bad-token-auth',
  },
  'bad-uuid-integration.yaml': {
    diagnostics: [[8, 21, 'E_SCHEMA', 'spec.source_config.integration_id: must be a UUID']],
    blocks: 'bad-uuid',
  },
  'billion-laughs.yaml': {
    diagnostics: [[6, 10, 'E_ALIAS', 'YAML aliases expand beyond the limit of 100 expansions (a "billion laughs"?)']],
    blocks: 'billion-laughs',
  },
  'binary-control-bytes.yaml': {
    diagnostics: [[4, 9, 'E_BINARY', 'file is not valid UTF-8 and holds control bytes: it looks binary']],
    blocks: null,
  },
  'binary-nul.yaml': { diagnostics: [[3, 1, 'E_BINARY', 'file holds a NUL byte']], blocks: null },
  'deeply-nested.yaml': { diagnostics: [[10, 273, 'E_DEPTH', 'nesting deeper than 64 levels']], blocks: null },
  'duplicate-a.yaml': {
    diagnostics: [
      [4, 9, 'E_DUPLICATE', 'Deployment "twice-declared" is declared 2 times (also at duplicate-b.yaml:5:9)'],
    ],
    blocks: 'twice-declared',
  },
  'duplicate-b.yaml': {
    diagnostics: [
      [5, 9, 'E_DUPLICATE', 'Deployment "twice-declared" is declared 2 times (also at duplicate-a.yaml:4:9)'],
    ],
    blocks: 'twice-declared',
  },
  'duplicate-in-file.yaml': {
    diagnostics: [
      [4, 9, 'E_DUPLICATE', 'OAuthProvider "twice-in-file" is declared 2 times (also at duplicate-in-file.yaml:12:9)'],
      [12, 9, 'E_DUPLICATE', 'OAuthProvider "twice-in-file" is declared 2 times (also at duplicate-in-file.yaml:4:9)'],
    ],
    blocks: 'twice-in-file',
  },
  'integration-without-repository.yaml': {
    diagnostics: [[7, 3, 'E_SCHEMA', 'spec.integration: names the code-host account used to resolve repository']],
    blocks: 'lone-integration',
  },
  'latin1-not-utf8.yaml': {
    diagnostics: [
      [
        4,
        12,
        'E_ENCODING',
        'file is not valid UTF-8: byte 0xE9 ("é" in Latin-1) here; it looks like Latin-1 or Windows-1252 text; re-save it as UTF-8',
      ],
    ],
    blocks: null,
  },
  'literal-client-secret.yaml': {
    diagnostics: [[8, 18, 'E_LITERAL_SECRET', 'client_secret has a literal value in the manifest']],
    blocks: 'literal-client-secret',
  },
  'literal-secret.yaml': {
    diagnostics: [[9, 14, 'E_LITERAL_SECRET', 'secret "OPENAI_API_KEY" has a literal value in the manifest']],
    blocks: 'literal-secret',
  },
  'metadata-labels.yaml': {
    diagnostics: [[5, 3, 'E_UNKNOWN_FIELD', 'unknown field "labels" in metadata']],
    blocks: 'metadata-labels',
  },
  'misplaced-resource-spec.yaml': {
    diagnostics: [[7, 3, 'E_UNKNOWN_FIELD', 'unknown field "resource_spec" in spec; it belongs in spec.source_config']],
    blocks: 'misplaced-resource-spec',
  },
  'missing-kind.yaml': {
    diagnostics: [[1, 1, 'E_SCHEMA', 'missing required field "kind" (Deployment, OAuthProvider)']],
    blocks: null,
  },
  'missing-metadata-name.yaml': {
    diagnostics: [[3, 1, 'E_SCHEMA', 'metadata: missing required field "name"']],
    blocks: null,
  },
  'missing-source.yaml': {
    diagnostics: [[5, 1, 'E_SCHEMA', 'spec: missing required field "source"']],
    blocks: 'missing-source',
  },
  'multi-doc-one-bad.yaml': {
    diagnostics: [[17, 18, 'E_SCHEMA', 'spec.source_config.resource_spec.max_scale: must be >= 0 (got -1)']],
    blocks: 'neighbour-bad',
  },
  'name-not-string.yaml': {
    diagnostics: [[4, 9, 'E_NAME', 'metadata.name: must be a string of lowercase letters, digits and dashes']],
    blocks: null,
  },
  'name-starts-with-digit.yaml': {
    diagnostics: [
      [
        4,
        9,
        'E_NAME',
        'metadata.name: is not a valid name: use lowercase letters, digits and dashes, starting with a letter',
      ],
    ],
    blocks: '2nd-agent',
  },
  'name-too-long.yaml': {
    diagnostics: [[4, 9, 'E_NAME', 'metadata.name: is longer than 63 characters']],
    blocks: 'a-deployment-name-that-goes-on-and-on-well-past-the-sixty-three-limit',
  },
  'name-uppercase.yaml': {
    diagnostics: [
      [
        4,
        9,
        'E_NAME',
        'metadata.name: is not a valid name: use lowercase letters, digits and dashes, starting with a letter, at most 63 characters, e.g. "support-agent"',
      ],
    ],
    blocks: 'Support_Agent',
  },
  'not-a-mapping.yaml': {
    diagnostics: [
      [
        2,
        1,
        'E_SCHEMA',
        'a manifest document must be a mapping with apiVersion, kind, metadata and spec; this one is a list',
      ],
    ],
    blocks: null,
  },
  'provider-mcp-ftp-url.yaml': {
    diagnostics: [[7, 19, 'E_SCHEMA', 'spec.mcp_server_url: must be an absolute http(s) URL']],
    blocks: 'ftp-mcp',
  },
  'provider-missing-token-url.yaml': {
    diagnostics: [[6, 3, 'E_SCHEMA', 'spec: missing required field token_url']],
    blocks: 'missing-token-url',
  },
  'provider-mixed-modes.yaml': {
    diagnostics: [[8, 3, 'E_SCHEMA', 'spec.client_id: cannot be combined with mcp_server_url']],
    blocks: 'mixed-modes',
  },
  'provider-relative-url.yaml': {
    diagnostics: [[8, 13, 'E_SCHEMA', 'spec.auth_url: must be an absolute http(s) URL']],
    blocks: 'relative-url',
  },
  'repo-commit-sha.yaml': {
    diagnostics: [
      [
        10,
        5,
        'E_UNKNOWN_FIELD',
        'unknown field "repo_commit_sha" in spec.source_revision_config; repo_commit_sha is read-only',
      ],
    ],
    blocks: 'repo-commit-sha',
  },
  'repository-and-repo-url.yaml': {
    diagnostics: [[9, 5, 'E_SCHEMA', 'spec.source_config.repo_url: conflicts with repository']],
    blocks: 'repository-and-url',
  },
  'repository-bad-format.yaml': {
    diagnostics: [[7, 15, 'E_SCHEMA', 'spec.repository: must be "owner/name"']],
    blocks: 'repository-format',
  },
  'repository-wrong-source.yaml': {
    diagnostics: [
      [7, 3, 'E_SCHEMA', "spec.repository: is only for source codehost (this deployment's source is external_docker)"],
    ],
    blocks: 'repository-on-docker',
  },
  'resource-spec-fraction.yaml': {
    diagnostics: [[9, 18, 'E_SCHEMA', 'spec.source_config.resource_spec.max_scale: expected a whole number, got 1.5']],
    blocks: 'fractional-scale',
  },
  'resource-spec-min-over-max.yaml': {
    diagnostics: [
      [9, 18, 'E_SCHEMA', 'spec.source_config.resource_spec.min_scale: min_scale (5) must not exceed max_scale (2)'],
    ],
    blocks: 'min-over-max',
  },
  'resource-spec-negative.yaml': {
    diagnostics: [[9, 12, 'E_SCHEMA', 'spec.source_config.resource_spec.cpu: must be >= 0 (got -0.5)']],
    blocks: 'negative-cpu',
  },
  'resource-spec-non-numeric.yaml': {
    diagnostics: [[9, 18, 'E_SCHEMA', 'spec.source_config.resource_spec.max_scale: expected a number, got a string']],
    blocks: 'non-numeric',
  },
  'resource-spec-queue-min-over-max.yaml': {
    diagnostics: [[10, 24, 'E_SCHEMA', 'queue_min_scale (3) must not exceed queue_max_scale (1)']],
    blocks: 'queue-min-over-max',
  },
  'resource-spec-quoted-number.yaml': {
    diagnostics: [
      [
        9,
        18,
        'E_SCHEMA',
        'spec.source_config.resource_spec.memory_mb: expected a number, got a string; remove the quotes',
      ],
    ],
    blocks: 'quoted-number',
  },
  'secret-bad-env-name.yaml': {
    diagnostics: [[10, 14, 'E_SCHEMA', 'spec.secrets[0].valueFrom.env: is not an environment variable name']],
    blocks: 'bad-env-name',
  },
  'secret-duplicate-name.yaml': {
    diagnostics: [[10, 13, 'E_SCHEMA', 'spec.secrets[1].name: "OPENAI_API_KEY" is already declared at secrets[0]']],
    blocks: 'duplicate-secret',
  },
  'secret-env-and-file.yaml': {
    diagnostics: [[9, 41, 'E_SCHEMA', 'spec.secrets[0].valueFrom.file: give either env or file, not both']],
    blocks: 'env-and-file',
  },
  'secret-missing-env.yaml': { diagnostics: [], blocks: null },
  'secret-missing-file.yaml': { diagnostics: [], blocks: null },
  'secret-no-source.yaml': {
    diagnostics: [[8, 7, 'E_SCHEMA', 'spec.secrets[0]: needs valueFrom: { env: NAME } or { file: PATH }']],
    blocks: 'secret-no-source',
  },
  'secret-references-wrong-source.yaml': {
    diagnostics: [[8, 3, 'E_SCHEMA', 'spec.secret_references: apply only to source external_docker']],
    blocks: 'references-on-codehost',
  },
  'source-config-null.yaml': {
    diagnostics: [[7, 3, 'E_SCHEMA', 'spec.source_config: expected a mapping, got an empty value (null)']],
    blocks: 'null-source-config',
  },
  'spec-is-string.yaml': {
    diagnostics: [[5, 7, 'E_SCHEMA', 'spec: expected a mapping, got a string']],
    blocks: 'spec-string',
  },
  'syntax-bad-indent.yaml': {
    diagnostics: [[6, 11, 'E_YAML', 'a line below this value is indented further than its key']],
    blocks: 'bad-indent',
  },
  'syntax-compact-nested.yaml': {
    diagnostics: [[6, 11, 'E_YAML', 'this value holds ": ", which YAML reads as a nested mapping']],
    blocks: 'compact-nested',
  },
  'syntax-duplicate-key.yaml': {
    diagnostics: [[8, 3, 'E_DUPLICATE_KEY', 'key "source" appears more than once in this mapping']],
    blocks: 'duplicate-key',
  },
  'syntax-tab-indent.yaml': {
    diagnostics: [[6, 1, 'E_TAB', 'tab character used for indentation']],
    blocks: 'tab-indent',
  },
  'syntax-unclosed-flow.yaml': {
    diagnostics: [[7, 12, 'E_YAML', 'flow list "[" is never closed with "]"']],
    blocks: 'unclosed-flow',
  },
  'syntax-unclosed-quote.yaml': {
    diagnostics: [[7, 15, 'E_YAML', 'double-quoted string is never closed']],
    blocks: 'unclosed-quote',
  },
  'syntax-undefined-alias.yaml': {
    diagnostics: [[7, 18, 'E_ALIAS', 'alias *shared refers to no anchor defined before it']],
    blocks: 'undefined-alias',
  },
  'top-level-unknown.yaml': {
    diagnostics: [[3, 1, 'E_UNKNOWN_FIELD', 'unknown field "name"; the name goes under metadata.name']],
    blocks: 'top-level-unknown',
  },
  'unknown-field-spec.yaml': {
    diagnostics: [[7, 3, 'E_UNKNOWN_FIELD', 'unknown field "replicas" in spec; known fields: source, repository']],
    blocks: 'unknown-field',
  },
  'unknown-field-typo.yaml': {
    diagnostics: [[7, 3, 'E_UNKNOWN_FIELD', 'unknown field "source_confg" in spec; did you mean "source_config"?']],
    blocks: 'field-typo',
  },
  'unknown-kind.yaml': {
    diagnostics: [[2, 7, 'E_KIND', 'kind: "Deploymnet" is not a kind converge manages; did you mean "Deployment"?']],
    blocks: null,
  },
  'valid-neighbour.yaml': { diagnostics: [], blocks: null },
  'wrong-api-version.yaml': {
    diagnostics: [[1, 13, 'E_SCHEMA', 'apiVersion: must be "converge/v1"']],
    blocks: 'wrong-api-version',
  },
  'wrong-type-boolean.yaml': {
    diagnostics: [
      [9, 20, 'E_SCHEMA', 'spec.source_config.build_on_push: expected true or false (unquoted), got a string'],
    ],
    blocks: 'wrong-type-boolean',
  },
  'wrong-type-secrets-map.yaml': {
    diagnostics: [[8, 5, 'E_SCHEMA', 'spec.secrets: expected a list, got a mapping']],
    blocks: 'secrets-map',
  },
  'codehost-without-repository.yaml': {
    diagnostics: [
      [
        7,
        3,
        'E_SCHEMA',
        'spec.source_config: a codehost deployment needs repository: OWNER/NAME, or both source_config.integration_id and source_config.repo_url; integration_id is missing',
      ],
    ],
    blocks: 'codehost-no-repo',
  },
  'deployment-type-bad-value.yaml': {
    diagnostics: [
      [9, 22, 'E_SCHEMA', 'spec.source_config.deployment_type: "dev_zero" is not one of "dev_free", "dev", "prod"'],
    ],
    blocks: 'bad-tier',
  },
  'graph-config-path-wrong-source.yaml': {
    diagnostics: [
      [
        9,
        5,
        'E_SCHEMA',
        "spec.source_revision_config.graph_config_path: is only for sources codehost and internal_source (this deployment's source is external_docker)",
      ],
    ],
    blocks: 'docker-graph-config',
  },
};
