// Manifest text for the tests: one Deployment document, with its spec as given or built from a few values.

/** A Deployment manifest of `name` whose spec is `spec` (YAML, indented here), with optional converge annotations. */
export function deploymentYaml(name: string, spec: string, annotations: Record<string, string> = {}): string {
  const notes = Object.entries(annotations);
  return [
    'apiVersion: converge/v1',
    'kind: Deployment',
    'metadata:',
    `  name: ${name}`,
    ...(notes.length ? ['  annotations:', ...notes.map(([k, v]) => `    ${k}: "${v}"`)] : []),
    'spec:',
    spec.replace(/^/gm, '  '),
    '',
  ].join('\n');
}

/** A Deployment manifest the emulator accepts as it is (internal_docker: image_uri required), scaled to `maxScale`. */
export function internalDockerYaml(name: string, maxScale: number, annotations: Record<string, string> = {}): string {
  const spec = [
    'source: internal_docker',
    'source_config:',
    `  resource_spec: { max_scale: ${maxScale} }`,
    'source_revision_config:',
    `  image_uri: registry.example.com/${name}:1`,
  ];
  return deploymentYaml(name, spec.join('\n'), annotations);
}

/** The spec of an external_docker Deployment (YAML): its image, its scale, its secrets from environment variables. */
export function externalDockerSpec(image: string, maxScale: number, secrets: Array<[string, string]> = []): string {
  const lines = [
    'source: external_docker',
    'source_config:',
    `  resource_spec: { max_scale: ${maxScale} }`,
    'source_revision_config:',
    `  image_uri: ${image}`,
  ];
  if (secrets.length) {
    lines.push('secrets:');
    for (const [name, env] of secrets) lines.push(`  - name: ${name}`, `    valueFrom: { env: ${env} }`);
  }
  return lines.join('\n');
}
