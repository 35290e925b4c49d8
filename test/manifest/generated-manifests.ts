// Generated manifests for the differential tests: mostly valid, in the many ways YAML lets one write them, and mutations of them.
import { prng } from '../helpers/prng.js';

/** Scalars of every kind, valid and not, that a generated manifest sometimes holds instead of a valid value. */
export const SCALARS = [
  'plain', 'two words', '1', '-1', '0x1F', '0o17', '1e3', '1.5', '.5', '1_000', '012', 'true', 'True', 'yes', 'no', 'on', '~', 'null',
  '2024-01-01', 'a#b', 'a # comment', '"double"', "'single'", "'it''s'", '"with: colon"', 'http://x.example/?a=1&b=2', 'ünïcödé',
  '"esc\\t"', '&anchor value', '*alias', '!!str 5', '|', '>', 'trailing   ', '"unclosed', "'", ':', '-', '- x', 'a: b', '{ a: 1 }',
  '[1, 2]', '{}', '[]', '{ env: SECRET_ENV }', '@at', '`tick`', '%pct', '? q', ',comma',
];

/** Forms js-yaml reads and the first fast reader declined, and forms where js-yaml and the yaml package part. */
export const MORE_SCALARS = [
  '"esc\\n"', '"\\x41\\u00e9"', '"\\/"', '0b101', '-0', '+.5', '+0x1F', '-0x1F', '1.', '0o8', '.inf', '-.Inf', '.NaN', '"x"#c', "'x'#c",
  '[a, [b, { c: d }]]', '{ a: { b: [1, 2] } }', '[a: b]', '{a, b: c}', '{a:b}', '{"a":b}', '[1, 2,]', '"multi\n  line"', '|\n  block',
  '>-\n  folded', '? k', 'x:y', '-x', '?x', ':x', '!tag x', '&a [1]', '<<', '__proto__', 'NULL', 'Null', 'FALSE', '0x_1F', '1e', '.', '..',
];

export interface ManifestGenerator {
  manifest(): string;
  mutate(text: string): string;
}

/** A deterministic generator of manifests (and mutations) from `seed`, drawing odd values from `scalars`. */
export function manifestGenerator(seed: number, scalars: readonly string[]): ManifestGenerator {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const NAMES = ['agent-one', 'Agent_Two', 'x', '1starts-with-digit', '"quoted-name"', "'single-name'", 'name with spaces'];
  const SOURCES = ['codehost', 'external_docker', 'internal_template', 'github', 'bogus'];
  const pad = (n: number) => ' '.repeat(n);

  /** Mostly a valid value, sometimes any scalar at all. */
  const often = (valid: readonly string[]): string => (random() < 0.85 ? pick(valid) : pick(scalars));

  function manifest(): string {
    const ind = pick([2, 2, 2, 4, 3]);
    const compact = random() < 0.5;
    const lines: string[] = [];
    if (random() < 0.2) lines.push('# a comment');
    if (random() < 0.2) lines.push('---');
    lines.push('apiVersion: converge/v1');
    lines.push(random() < 0.95 ? 'kind: Deployment' : `kind: ${pick(['Deploymnet', 'OAuthProvider', '1', '~'])}`);
    lines.push('metadata:');
    lines.push(`${pad(ind)}name: ${often(NAMES)}`);
    if (random() < 0.4) lines.push(`${pad(ind)}annotations:`, `${pad(ind * 2)}team: ${often(['platform', '"quoted team"', "'single'"])}`);
    lines.push('spec:');
    const source = random() < 0.9 ? 'external_docker' : pick(SOURCES);
    lines.push(`${pad(ind)}source: ${source}`);
    if (source !== 'external_docker' && random() < 0.5) lines.push(`${pad(ind)}repository: ${often(['acme/agent', 'acme/agent # c', '"acme/agent"'])}`);
    if (random() < 0.7) {
      lines.push(`${pad(ind)}source_config:`);
      lines.push(`${pad(ind * 2)}resource_spec:`);
      lines.push(`${pad(ind * 3)}max_scale: ${often(['3', '1', '0x3', '3.0', '+2', '"3"', 'three'])}`);
      if (random() < 0.5) lines.push(`${pad(ind * 3)}cpu: ${often(['1', '2', '0.5', 'x'])}`);
      if (random() < 0.3) lines.push('');
      if (random() < 0.3) lines.push(`${pad(ind * 3)}# comment inside`);
    }
    if (random() < 0.8) {
      if (random() < 0.5) {
        lines.push(`${pad(ind)}source_revision_config:`);
        lines.push(`${pad(ind * 2)}image_uri: ${often(['docker.io/acme/x:1', '"docker.io/acme/x:1"', 'docker.io/acme/x:1 # pinned'])}`);
      } else {
        lines.push(`${pad(ind)}source_revision_config: { image_uri: ${often(['docker.io/acme/x:1', '"docker.io/acme/x:1"', "'docker.io/acme/x:1'"])} }`);
      }
    }
    if (random() < 0.6) {
      lines.push(`${pad(ind)}secrets:`);
      const dash = compact ? pad(ind) : pad(ind * 2);
      const count = 1 + Math.floor(random() * 3);
      for (let i = 0; i < count; i++) {
        const style = random();
        if (style < 0.4) {
          lines.push(`${dash}- name: S${i}`, `${dash}  valueFrom: { env: ${often(['SECRET_ENV', 'X', '"QUOTED_ENV"'])} }`);
        } else if (style < 0.7) {
          lines.push(`${dash}- name: S${i}`, `${dash}  valueFrom:`, `${dash}    ${pick(['env', 'file'])}: ${often(['SECRET_ENV', './s.txt'])}`);
        } else if (style < 0.85) {
          lines.push(`${dash}- name: S${i}`, `${dash}  value: ${pick(['literal', pick(scalars)])}`);
        } else {
          lines.push(`${dash}- ${pick(scalars)}`);
        }
      }
    }
    if (random() < 0.1) lines.push(`${pad(ind)}unknown_field: 1`);
    if (random() < 0.15) lines.push('---', 'apiVersion: converge/v1', 'kind: OAuthProvider', 'metadata:', `${pad(ind)}name: prov`, 'spec:', `${pad(ind)}name: ${often(['Prov'])}`, `${pad(ind)}mcp_server_url: https://mcp.example.com/mcp`);
    return lines.join('\n') + (random() < 0.9 ? '\n' : '');
  }

  function mutate(text: string): string {
    const at = Math.floor(random() * (text.length + 1));
    const op = random();
    if (op < 0.3) return text.slice(0, at) + pick([' ', ':', '-', '#', '"', "'", '\n', '  ', '{', '&', '*', '\t', 'x']) + text.slice(at);
    if (op < 0.6) return text.slice(0, at) + text.slice(at + 1 + Math.floor(random() * 3));
    const lines = text.split('\n');
    const i = Math.floor(random() * lines.length);
    if (op < 0.8) lines.splice(i, 0, lines[Math.floor(random() * lines.length)]!);
    else lines[i] = pad(Math.floor(random() * 6)) + lines[i]!.trimStart();
    return lines.join('\n');
  }

  return { manifest, mutate };
}

/** Plain values, valid anywhere, that most generated YAML holds. */
const COMMON_SCALARS = ['x', 'y', 'z', '1', '-2', '0.5', '"q"', "'s'", 'a b', 'true', 'null', '~', '"e\\n"', 'a#b', 'http://x/y?z=1', '[]', '{}', '""', "''"];
/** Odd values: every scalar above, and document markers where they do not belong. */
const ODD_SCALARS = [...SCALARS, ...MORE_SCALARS, 'k: v', '---x', '--- x', '...', '---', '- ---'];
const KEYS = ['a', 'b', 'c', 'key', '"qk"', "'sk'", 'k.x/y', '1', '? e', 'n-1', 'a b', '~', 'x:y'];

/**
 * A deterministic generator of YAML texts of any shape (not manifests): one or two documents of block mappings
 * and sequences, flow collections, comments and scalars of every kind, at odd indents, half of them mutated.
 */
export function yamlGenerator(seed: number): () => string {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const scalar = (): string => (random() < 0.75 ? pick(COMMON_SCALARS) : pick(ODD_SCALARS));
  const comment = (): string => (random() < 0.1 ? ' # c' : '');

  function flow(depth: number): string {
    const r = random();
    if (depth > 2 || r < 0.5) {
      const value = scalar();
      return value.includes('\n') ? 'x' : value;
    }
    const count = Math.floor(random() * 3);
    if (r < 0.75) return `[${Array.from({ length: count }, () => flow(depth + 1)).join(pick([', ', ',', ' , ']))}]`;
    return `{${Array.from({ length: count }, () => `${pick(KEYS)}: ${flow(depth + 1)}`).join(pick([', ', ',']))}}`;
  }

  function block(indent: number, depth: number, lines: string[]): void {
    const count = 1 + Math.floor(random() * 3);
    const step = pick([2, 2, 4, 1, 3]);
    const sequence = random() < 0.3;
    for (let i = 0; i < count; i++) {
      const lead = ' '.repeat(indent) + (sequence ? '- ' : `${pick(KEYS)}:${random() < 0.9 ? ' ' : ''}`);
      if (random() < 0.1) lines.push(' '.repeat(indent + Math.floor(random() * 4)) + '# c');
      const r = random();
      if (depth < 4 && r < 0.35) {
        lines.push(lead.trimEnd() + (random() < 0.2 ? ' # c' : ''));
        block(sequence && random() < 0.5 ? indent + 2 : indent + step, depth + 1, lines);
      } else if (r < 0.6) {
        lines.push(lead + flow(0) + comment());
      } else {
        lines.push(lead + scalar() + comment());
      }
    }
  }

  return () => {
    const lines: string[] = [];
    const documents = 1 + Math.floor(random() * 2);
    for (let d = 0; d < documents; d++) {
      if (d > 0 || random() < 0.2) lines.push('---');
      block(random() < 0.1 ? 2 : 0, 0, lines);
    }
    const text = lines.join('\n') + '\n';
    if (random() < 0.5) return text;
    const at = Math.floor(random() * text.length);
    if (random() < 0.5) return text.slice(0, at) + text.slice(at + 1);
    const inserted = pick(['---', '...', '\n---', '\n--- ', ' ', ':', '-', '#', '"', "'", '\n', '  ', '{', '}', '[', ']', ',', '&', '*', '!', '|', '>', '?', 'x', '\\']);
    return text.slice(0, at) + inserted + text.slice(at);
  };
}
