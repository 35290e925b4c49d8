// examples/manifests/README.md tells what the first plan of the examples shows: its summary line and a table of each
// resource's action. Both are checked here against the plan the README's embedded command prints (the built binary).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dropPrefix, REDIS_URL, ROOT, runConverge, testPrefix } from './helpers.js';

const README = join(ROOT, 'examples', 'manifests', 'README.md');
const ENV = Object.fromEntries(
  [
    'EXAMPLE_OPENAI_API_KEY',
    'EXAMPLE_STRIPE_API_KEY',
    'EXAMPLE_ANTHROPIC_API_KEY',
    'EXAMPLE_SLACK_BOT_TOKEN',
    'EXAMPLE_SALESFORCE_TOKEN',
    'EXAMPLE_SLACK_CLIENT_SECRET',
  ].map((name) => [name, 'demo']),
);

/** The summary line the README quotes, in the fenced block after "The first plan ends with". */
function statedSummary(text: string): string {
  const match = /first plan ends with\n\n```\n(Plan: [^\n]+)\n```/.exec(text);
  if (!match) throw new Error('examples/manifests/README.md quotes no "Plan:" line after "The first plan ends with"');
  return match[1]!;
}

/** "Kind/name" -> action ("adopt, suspended" for a suspended change), from the README's resource table. */
function statedActions(text: string): Map<string, string> {
  const table = text.slice(text.indexOf('| resource | action |'));
  const actions = new Map<string, string>();
  for (const row of table.split('\n').slice(2)) {
    if (!row.startsWith('|')) break;
    const [resource, action] = row
      .split('|')
      .slice(1, 3)
      .map((cell) => cell.trim()) as [string, string];
    const kind = resource.split(' ')[0]!;
    for (const [, name] of resource.matchAll(/`([^`]+)`/g)) actions.set(`${kind}/${name}`, action);
  }
  return actions;
}

describe('examples/manifests/README.md', () => {
  const prefix = testPrefix('examples-readme');
  afterAll(async () => {
    await dropPrefix(prefix);
  });

  it('states the plan the example gives: its summary line, and each resource with its action', async () => {
    const text = readFileSync(README, 'utf8');
    const command = [
      'plan',
      'examples/manifests',
      '--api-url',
      'embedded',
      '--emulator-state',
      'examples/emulator-state.yaml',
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
    ];
    const printed = await runConverge(command, ENV);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout.split('\n')).toContain(statedSummary(text));

    const json = await runConverge([...command, '--output', 'json'], ENV);
    expect(json.code, json.stderr).toBe(0);
    const plan = JSON.parse(json.stdout) as {
      changes: Array<{ kind: string; name: string; action: string; suspended?: boolean }>;
    };
    const actual = new Map(
      plan.changes.map((c) => [`${c.kind}/${c.name}`, c.suspended === true ? `${c.action}, suspended` : c.action]),
    );
    expect(Object.fromEntries([...statedActions(text)].sort())).toEqual(Object.fromEntries([...actual].sort()));
  });
});
