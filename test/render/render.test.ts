// Renderer tests: literal text, markdown and JSON renderings; colour on/off; escaping; secrets never rendered.
import { describe, expect, it } from 'vitest';
import type { Plan } from '../../src/core/model.js';
import { plan } from '../../src/plan/plan.js';
import { renderJson, renderMarkdown, renderText } from '../../src/plan/render/index.js';
import {
  OPENAI_OLD_VALUE,
  OPENAI_VALUE,
  SLACK_SECRET_VALUE,
  deploymentKey,
  desired,
  hashOf,
  live,
  supportAgentLive,
  supportAgentSpec,
} from '../plan/fixtures.js';
import { samplePlan } from '../plan/sample-plan.js';

const SAMPLE_TEXT = `  ~ update Deployment/batch-agent (forces new revision) (suspended: not applied)
      ~ source_config.resource_spec.max_scale: 2 -> 8
      # suspended by converge/suspend: shown, not applied

  ! blocked Deployment/billing-agent
      # invalid manifest apps/billing.yaml:9:7: max_scale must be a number | fix the value

  ~ update Deployment/docs-agent
      ~ source_config.build_on_push: true -> false

  + create Deployment/new-agent (forces new revision)
      + name: "new-agent"
      + source: "codehost"
      + source_config.integration_id: "3f9d2c4e-1b7a-4e8f-9c61-2a5b7d0e4f13"
      + source_config.repo_url: "https://codehost.example.com/acme/new-agent"
      + source_config.build_on_push: true
      + source_config.resource_spec.max_scale: 2
      + source_config.deployment_type: "prod"
      + source_revision_config.repo_ref: "main"
      + source_revision_config.graph_config_path: "langgraph.json"
      + secrets.OPENAI_API_KEY: (sensitive)

  ! blocked Deployment/search-agent
      ~ source_config.repo_url: "https://codehost.example.com/acme/search-agent" -> "https://codehost.example.com/acme/search-agent-v2"
      # source_config.repo_url cannot be changed after creation (live: "https://codehost.example.com/acme/search-agent", manifest: "https://codehost.example.com/acme/search-agent-v2"); set it back to the live value, or give the deployment a new metadata.name

  ~ update Deployment/support-agent (forces new revision)
      ~ source_config.resource_spec.max_scale: 2 -> 4
      ~ secrets.OPENAI_API_KEY: (sensitive) -> (sensitive)

  + create OAuthProvider/linear
      + provider_id: "linear"
      + name: "Linear"
      + mcp_server_url: "https://mcp.linear.example/mcp"
      + discovered.auth_url: "https://auth.linear.example/oauth/authorize"
      + discovered.token_url: "https://auth.linear.example/oauth/token"
      + discovered.uses_pkce: true
      + discovered.registration: true

  + create OAuthProvider/slack
      + provider_id: "slack"
      + name: "Slack"
      + client_id: "123.456"
      + auth_url: "https://slack.com/oauth/v2/authorize"
      + token_url: "https://slack.com/api/oauth.v2.access"
      + client_secret: (sensitive)
      + provider_type: "slack"

  ? 1 live deployment is in no manifest: legacy-rag (converge never deletes)

Diagnostics:
  apps/billing.yaml:9:7: error: spec.source_config.resource_spec.max_scale must be a number, got "four"

Plan: 3 to create, 2 to update, 1 suspended, 2 blocked, 1 orphaned, 1 unchanged. 1 suspended change is shown but not applied.
`;

const SAMPLE_MARKDOWN = `### converge plan

| create | update | suspended | blocked | orphan | unchanged |
|---:|---:|---:|---:|---:|---:|
| 3 | 2 | 1 | 2 | 1 | 1 |

Plan: 3 to create, 2 to update, 1 suspended, 2 blocked, 1 orphaned, 1 unchanged. 1 suspended change is shown but not applied.

#### Changes

| | resource | action | new revision | note |
|:-:|---|---|:-:|---|
| \`~\` | \`Deployment/batch-agent\` | update (suspended) | yes | suspended by converge/suspend: shown, not applied |
| \`!\` | \`Deployment/billing-agent\` | blocked | no | invalid manifest apps/billing.yaml:9:7: max\\_scale must be a number \\| fix the value |
| \`~\` | \`Deployment/docs-agent\` | update | no |  |
| \`+\` | \`Deployment/new-agent\` | create | yes |  |
| \`!\` | \`Deployment/search-agent\` | blocked | no | source\\_config.repo\\_url cannot be changed after creation (live: "https://codehost.example.com/acme/search-agent", manifest: "https://codehost.example.com/acme/search-agent-v2"); set it back to the live value, or give the deployment a new metadata.name |
| \`~\` | \`Deployment/support-agent\` | update | yes |  |
| \`+\` | \`OAuthProvider/linear\` | create | no |  |
| \`+\` | \`OAuthProvider/slack\` | create | no |  |

<details><summary><code>~ update Deployment/batch-agent</code> (forces new revision) (suspended: not applied)</summary>

\`\`\`diff
- source_config.resource_spec.max_scale: 2
+ source_config.resource_spec.max_scale: 8
\`\`\`

</details>

<details><summary><code>~ update Deployment/docs-agent</code></summary>

\`\`\`diff
- source_config.build_on_push: true
+ source_config.build_on_push: false
\`\`\`

</details>

<details><summary><code>+ create Deployment/new-agent</code> (forces new revision)</summary>

\`\`\`diff
+ name: "new-agent"
+ source: "codehost"
+ source_config.integration_id: "3f9d2c4e-1b7a-4e8f-9c61-2a5b7d0e4f13"
+ source_config.repo_url: "https://codehost.example.com/acme/new-agent"
+ source_config.build_on_push: true
+ source_config.resource_spec.max_scale: 2
+ source_config.deployment_type: "prod"
+ source_revision_config.repo_ref: "main"
+ source_revision_config.graph_config_path: "langgraph.json"
+ secrets.OPENAI_API_KEY: (sensitive)
\`\`\`

</details>

<details><summary><code>! blocked Deployment/search-agent</code></summary>

\`\`\`diff
- source_config.repo_url: "https://codehost.example.com/acme/search-agent"
+ source_config.repo_url: "https://codehost.example.com/acme/search-agent-v2"
\`\`\`

</details>

<details><summary><code>~ update Deployment/support-agent</code> (forces new revision)</summary>

\`\`\`diff
- source_config.resource_spec.max_scale: 2
+ source_config.resource_spec.max_scale: 4
- secrets.OPENAI_API_KEY: (sensitive)
+ secrets.OPENAI_API_KEY: (sensitive)
\`\`\`

</details>

<details><summary><code>+ create OAuthProvider/linear</code></summary>

\`\`\`diff
+ provider_id: "linear"
+ name: "Linear"
+ mcp_server_url: "https://mcp.linear.example/mcp"
+ discovered.auth_url: "https://auth.linear.example/oauth/authorize"
+ discovered.token_url: "https://auth.linear.example/oauth/token"
+ discovered.uses_pkce: true
+ discovered.registration: true
\`\`\`

</details>

<details><summary><code>+ create OAuthProvider/slack</code></summary>

\`\`\`diff
+ provider_id: "slack"
+ name: "Slack"
+ client_id: "123.456"
+ auth_url: "https://slack.com/oauth/v2/authorize"
+ token_url: "https://slack.com/api/oauth.v2.access"
+ client_secret: (sensitive)
+ provider_type: "slack"
\`\`\`

</details>

<details><summary>1 live deployment is in no manifest (converge never deletes)</summary>

- \`Deployment/legacy-rag\`

</details>

#### Diagnostics

- **error** \`apps/billing.yaml:9:7\`: spec.source\\_config.resource\\_spec.max\\_scale must be a number, got "four"
`;

/** support-agent with max_scale 2 -> 4 and a rotated secret, plus one orphan and one warning. */
function smallPlan(): Plan {
  const spec = supportAgentSpec();
  (spec.source_config!.resource_spec as Record<string, unknown>).max_scale = 4;
  return plan({
    resources: [desired('support-agent', spec)],
    blocked: [],
    diagnostics: [
      {
        severity: 'warning',
        file: 'apps/support.yaml',
        line: 3,
        column: 5,
        message: 'annotation converge/drift is "heal" by default',
        code: 'W_REDUNDANT',
      },
    ],
    live: {
      deployments: [
        supportAgentLive({ secrets: [{ name: 'OPENAI_API_KEY', value: OPENAI_OLD_VALUE }] }),
        live('legacy-rag', { id: '7e7e7e7e-0000-4000-8000-000000000001' }),
      ],
    },
    applied: new Map(),
    secretHashes: new Map([
      [deploymentKey('support-agent'), { OPENAI_API_KEY: hashOf('support-agent', 'OPENAI_API_KEY', OPENAI_VALUE) }],
    ]),
  });
}

const SMALL_JSON = `{
  "format_version": "1",
  "summary": {
    "create": 0,
    "update": 1,
    "adopt": 0,
    "delete": 0,
    "noop": 0,
    "orphan": 1,
    "blocked": 0,
    "suspended": 0
  },
  "changes": [
    {
      "kind": "Deployment",
      "name": "legacy-rag",
      "action": "orphan",
      "new_revision": false,
      "suspended": false,
      "released": false,
      "fields": [],
      "reason": "live deployment not in any manifest; converge never deletes"
    },
    {
      "kind": "Deployment",
      "name": "support-agent",
      "action": "update",
      "new_revision": true,
      "suspended": false,
      "released": false,
      "fields": [
        {
          "path": "source_config.resource_spec.max_scale",
          "before": 2,
          "after": 4,
          "sensitive": false
        },
        {
          "path": "secrets.OPENAI_API_KEY",
          "before": "(sensitive)",
          "after": "(sensitive)",
          "sensitive": true
        }
      ],
      "reason": null
    }
  ],
  "notes": [],
  "health": [],
  "diagnostics": [
    {
      "severity": "warning",
      "file": "apps/support.yaml",
      "line": 3,
      "column": 5,
      "message": "annotation converge/drift is \\"heal\\" by default"
    }
  ]
}
`;

const E = '\x1b[';
const SMALL_TEXT_COLOR = [
  `  ${E}33m${E}1m~ update${E}0m Deployment/support-agent ${E}35m(forces new revision)${E}0m`,
  `      ${E}33m~${E}0m source_config.resource_spec.max_scale: 2 -> 4`,
  `      ${E}33m~${E}0m secrets.OPENAI_API_KEY: (sensitive) -> (sensitive)`,
  '',
  `  ${E}36m? 1 live deployment is in no manifest: legacy-rag (converge never deletes)${E}0m`,
  '',
  `${E}1mDiagnostics:${E}0m`,
  `  apps/support.yaml:3:5: ${E}33m${E}1mwarning${E}0m: annotation converge/drift is "heal" by default`,
  '',
  `${E}1mPlan:${E}0m 0 to create, 1 to update, 0 blocked, 1 orphaned, 0 unchanged.`,
  '',
].join('\n');

function noChanges(orphans: number): Plan {
  return plan({
    resources: [desired('support-agent', supportAgentSpec())],
    blocked: [],
    diagnostics: [],
    live: {
      deployments: [
        supportAgentLive(),
        ...Array.from({ length: orphans }, (_, i) =>
          live(`old-${i}`, { id: `7f7f7f7f-0000-4000-8000-00000000000${i}` }),
        ),
      ],
    },
    applied: new Map(),
    secretHashes: new Map([
      [deploymentKey('support-agent'), { OPENAI_API_KEY: hashOf('support-agent', 'OPENAI_API_KEY', OPENAI_VALUE) }],
    ]),
  });
}

describe('renderText', () => {
  it('renders the representative plan terraform-like, noops only counted', () => {
    expect(renderText(samplePlan(), { color: false })).toBe(SAMPLE_TEXT);
  });

  it('colours with ANSI only when asked', () => {
    expect(renderText(smallPlan(), { color: true })).toBe(SMALL_TEXT_COLOR);
    expect(renderText(smallPlan(), { color: false })).not.toContain('\x1b');
    // eslint-disable-next-line no-control-regex -- the ANSI escape is what the test strips
    expect(renderText(smallPlan(), { color: false })).toBe(SMALL_TEXT_COLOR.replace(/\x1b\[\d+m/g, ''));
  });

  it.each([
    [0, 'No changes. Live state matches the manifests.\n'],
    [
      2,
      '  ? 2 live deployments are in no manifest: old-0, old-1 (converge never deletes)\n\n' +
        'No changes. Live state matches the manifests; 2 live deployments are in no manifest (orphaned, never deleted).\n',
    ],
  ])('no changes with %i orphans', (orphans, expected) => {
    expect(renderText(noChanges(orphans), { color: false })).toBe(expected);
  });
});

describe('renderMarkdown', () => {
  it('renders the representative plan as a pull-request comment', () => {
    expect(renderMarkdown(samplePlan())).toBe(SAMPLE_MARKDOWN);
  });

  it('no changes: the summary table and the sentence only', () => {
    expect(renderMarkdown(noChanges(0))).toBe(
      '### converge plan\n\n| create | update | suspended | blocked | orphan | unchanged |\n|---:|---:|---:|---:|---:|---:|\n| 0 | 0 | 0 | 0 | 0 | 1 |\n\nNo changes. Live state matches the manifests.\n',
    );
  });

  it('escapes pipes and HTML, and lengthens the code fence past backticks in values', () => {
    const tricky: Plan = {
      format_version: '1',
      summary: { create: 0, update: 1, adopt: 0, delete: 0, noop: 0, orphan: 0, blocked: 0, suspended: 0 },
      changes: [
        {
          kind: 'Deployment',
          name: 'a|b',
          action: 'update',
          new_revision: false,
          fields: [
            { path: 'source_config.build_command', before: 'make', after: 'echo ```<b>|x</b>```', sensitive: false },
          ],
          reason: 'note with | pipe and <script>',
        },
      ],
      diagnostics: [],
    };
    const out = renderMarkdown(tricky);
    expect(out).toContain('| `~` | `Deployment/a\\|b` | update | no | note with \\| pipe and \\<script\\> |');
    expect(out).toContain('<details><summary><code>~ update Deployment/a|b</code></summary>');
    expect(out).toContain(
      '````diff\n- source_config.build_command: "make"\n+ source_config.build_command: "echo ```<b>|x</b>```"\n````',
    );
  });
});

describe('notes of unchanged resources', () => {
  const NOTE =
    'the service reports source_config.listener_config as null, not as declared, since converge last wrote it: in sync, not sent again';
  function noted(): Plan {
    const noop = { kind: 'Deployment' as const, action: 'noop' as const, new_revision: false, fields: [] };
    return {
      format_version: '1',
      summary: { create: 0, update: 0, adopt: 0, delete: 0, noop: 3, orphan: 0, blocked: 0, suspended: 0 },
      changes: [
        { ...noop, name: 'quiet', reason: null },
        { ...noop, name: 'triage', reason: NOTE },
        { ...noop, name: 'paused', reason: 'suspended by converge/suspend: shown, not applied', suspended: true },
      ],
      diagnostics: [],
    };
  }

  it('text: listed under Notes after the changes, the plan still says no changes; suspended noops are not listed', () => {
    expect(renderText(noted(), { color: false })).toBe(
      `Notes (unchanged):\n  Deployment/triage: ${NOTE}\n\nNo changes. Live state matches the manifests.\n`,
    );
  });

  it('markdown: a Notes list with escaped text', () => {
    const out = renderMarkdown(noted());
    expect(out).toContain(`#### Notes (unchanged)\n\n- \`Deployment/triage\`: ${NOTE.replace(/_/g, '\\_')}\n`);
    expect(out).not.toContain('paused');
  });
});

describe('renderJson', () => {
  it('prints exactly the documented keys, stable order, 2-space indent', () => {
    expect(renderJson(smallPlan())).toBe(SMALL_JSON);
  });

  it('marks a suspended change `suspended: true` and counts it as suspended, never as an update', () => {
    const parsed = JSON.parse(renderJson(samplePlan())) as {
      summary: Record<string, number>;
      changes: Array<Record<string, unknown>>;
    };
    for (const change of parsed.changes) {
      expect(Object.keys(change)).toEqual([
        'kind',
        'name',
        'action',
        'new_revision',
        'suspended',
        'released',
        'fields',
        'reason',
      ]);
    }
    const batch = parsed.changes.find((c) => c.name === 'batch-agent');
    expect(batch).toMatchObject({
      action: 'update',
      suspended: true,
      reason: 'suspended by converge/suspend: shown, not applied',
    });
    expect(parsed.changes.filter((c) => c.suspended === true)).toHaveLength(1);
    expect(parsed.summary).toEqual({
      create: 3,
      update: 2,
      adopt: 0,
      delete: 0,
      noop: 1,
      orphan: 1,
      blocked: 2,
      suspended: 1,
    });
  });
});

/** `count` live deployments in no manifest, `changed` updates whose field values are `width` characters long. */
function bigPlan(count: number, changed = 0, width = 0): Plan {
  const changes: Plan['changes'] = [];
  for (let i = 0; i < changed; i++) {
    const value = `v${i}-`.padEnd(width, 'x');
    changes.push({
      kind: 'Deployment',
      name: `changed-${String(i).padStart(4, '0')}`,
      action: 'update',
      new_revision: false,
      reason: null,
      fields: [{ path: 'source_config.build_command', before: 'make', after: value, sensitive: false }],
    });
  }
  for (let i = 0; i < count; i++) {
    changes.push({
      kind: 'Deployment',
      name: `orphan-${String(i).padStart(4, '0')}-of-a-long-team-name`,
      action: 'orphan',
      new_revision: false,
      fields: [],
      reason: 'live deployment not in any manifest; converge never deletes',
    });
  }
  return {
    format_version: '1',
    summary: { create: 0, update: changed, adopt: 0, delete: 0, noop: 0, orphan: count, blocked: 0, suspended: 0 },
    changes,
    diagnostics: [],
  };
}

describe('plans that fit', () => {
  it('text: orphans are one line naming three and counting the rest; --show-orphans lists them', () => {
    const text = renderText(bigPlan(13), { color: false });
    expect(text).toContain(
      '  ? 13 live deployments are in no manifest: orphan-0000-of-a-long-team-name, orphan-0001-of-a-long-team-name, orphan-0002-of-a-long-team-name and 10 more; --show-orphans lists them\n',
    );
    expect(text.split('\n')).toHaveLength(4);
    const listed = renderText(bigPlan(13), { color: false, showOrphans: true });
    expect(listed).toContain(
      '  ? 13 live deployments are in no manifest (converge never deletes):\n      Deployment/orphan-0000-of-a-long-team-name\n',
    );
    expect(listed).toContain('      Deployment/orphan-0012-of-a-long-team-name\n');
  });

  it('markdown: orphans are one collapsed section; JSON keeps every one', () => {
    const markdown = renderMarkdown(bigPlan(13));
    expect(markdown.match(/<details>/g)).toHaveLength(1);
    expect(markdown).toContain(
      '<details><summary>13 live deployments are in no manifest (converge never deletes)</summary>',
    );
    expect(markdown).toContain('- `Deployment/orphan-0012-of-a-long-team-name`');
    const json = JSON.parse(renderJson(bigPlan(1500))) as { changes: unknown[] };
    expect(json.changes).toHaveLength(1500);
  });

  it('markdown never exceeds 60,000 characters: 1,500 orphans', () => {
    const full = renderMarkdown(bigPlan(1500), Number.MAX_SAFE_INTEGER);
    expect(full.length).toBeGreaterThan(60_000);
    const markdown = renderMarkdown(bigPlan(1500));
    expect(markdown.length).toBeLessThanOrEqual(60_000);
    const kept = markdown.match(/- `Deployment\/orphan-/g)!.length;
    expect(kept).toBeGreaterThan(1000);
    expect(markdown).toContain(
      `**${1500 - kept} resources left out** to keep this plan under 60,000 characters; \`converge plan --output json\` holds them all.`,
    );
    expect(markdown).toContain('<details><summary>1500 live deployments are in no manifest');
    expect(markdown.endsWith('\n')).toBe(true);
  });

  it('markdown never exceeds 60,000 characters: large changes keep every row; their field details are cut first', () => {
    const markdown = renderMarkdown(bigPlan(20, 200, 2_000));
    expect(markdown.length).toBeLessThanOrEqual(60_000);
    const rows = markdown.match(/^\| `~` \| `Deployment\/changed-/gm)!.length;
    const details = markdown.match(/<summary><code>~ update Deployment\/changed-/g)!.length;
    expect(rows).toBe(200);
    expect(details).toBeGreaterThan(10);
    expect(details).toBeLessThan(200);
    // The details kept are those of the first rows.
    expect(markdown).toContain('<summary><code>~ update Deployment/changed-0000</code>');
    expect(markdown).not.toContain('<summary><code>~ update Deployment/changed-0199</code>');
    expect(markdown).toContain(
      `**The field details of ${200 - details} resources left out** to keep this plan under 60,000 characters; \`converge plan --output json\` holds them all.`,
    );
    expect(markdown).not.toMatch(/\*\*\d+ resources left out/);
    // Every orphan is still listed, and the summary counts every change.
    expect(markdown).toContain('<details><summary>20 live deployments are in no manifest');
    expect(markdown).toContain('| 0 | 200 | 0 | 0 | 20 | 0 |');
  });

  it('markdown of 500 creates and 300 adoptions: one row per resource, the adoption note once', () => {
    const resources = [];
    const liveDeployments = [];
    for (let i = 0; i < 800; i++) {
      const name = `team-agent-${String(i).padStart(4, '0')}`;
      const spec = supportAgentSpec();
      spec.source_config = { ...spec.source_config, repo_url: `https://codehost.example.com/acme/${name}` };
      spec.secrets = [];
      resources.push(desired(name, spec));
      if (i >= 500)
        liveDeployments.push(
          live(name, {
            source_config: {
              ...spec.source_config,
              resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.5, memory_mb: 1024 },
            },
            source_revision_config: { repo_ref: 'main', graph_config_path: 'agent/graph.json' },
          }),
        );
    }
    const result = plan({
      resources,
      blocked: [],
      diagnostics: [],
      live: { deployments: liveDeployments },
      applied: new Map(),
      secretHashes: new Map(),
      ownershipKnown: true,
    });
    expect(result.summary).toMatchObject({ create: 500, adopt: 300 });
    const markdown = renderMarkdown(result);
    expect(markdown.length).toBeLessThanOrEqual(60_000);
    expect(markdown.match(/^\| `\+` \| `Deployment\/team-agent-/gm)).toHaveLength(500);
    expect(markdown.match(/^\| `<` \| `Deployment\/team-agent-/gm)).toHaveLength(300);
    expect(markdown.match(/this first write takes it over/g)).toHaveLength(1);
    expect(markdown).toContain(
      '- **Note 1** (300 resources): converge did not create this live resource; this first write takes it over',
    );
    expect(markdown.match(/\| see note 1 \|$/gm)).toHaveLength(300);
    expect(markdown).toMatch(/\*\*The field details of \d+ resources left out\*\*/);
    expect(markdown).not.toMatch(/\*\*\d+ resources left out/);
  });

  it('markdown: only when the rows alone do not fit are resources left out, and it says how many', () => {
    const markdown = renderMarkdown(bigPlan(0, 2_000, 10));
    expect(markdown.length).toBeLessThanOrEqual(60_000);
    expect(markdown).not.toContain('<details>');
    const rows = markdown.match(/^\| `~` \| `Deployment\/changed-/gm)!.length;
    expect(rows).toBeGreaterThan(500);
    expect(rows).toBeLessThan(2_000);
    expect(markdown).toContain(`**The field details of ${rows} resources and ${2_000 - rows} resources left out**`);
  });

  it('markdown: a note on one row stays in its row', () => {
    const single = bigPlan(0, 2, 10);
    single.changes[0]!.reason = 'only this one';
    const markdown = renderMarkdown(single);
    expect(markdown).toContain('| only this one |');
    expect(markdown).not.toContain('**Note 1**');
  });

  it('names an orphan converge applied once, once, as no longer declared', () => {
    const result = plan({
      resources: [],
      blocked: [],
      diagnostics: [],
      live: {
        deployments: [
          live('retired', { id: '7e7e7e7e-0000-4000-8000-000000000002' }),
          live('stranger', { id: '7e7e7e7e-0000-4000-8000-000000000003' }),
        ],
      },
      applied: new Map([[deploymentKey('retired'), { secrets: {}, appliedAt: '2026-01-01T00:00:00.000Z' }]]),
      secretHashes: new Map(),
    });
    const text = renderText(result, { color: false });
    expect(text).toContain(
      '  ? Deployment/retired is no longer declared: converge owns it and its manifest is gone; converge apply --prune deletes it\n',
    );
    expect(text.match(/retired/g)).toHaveLength(1);
    expect(text).toContain('1 live deployment is in no manifest: stranger (converge never deletes)');
    const markdown = renderMarkdown(result);
    expect(markdown.match(/retired/g)).toHaveLength(1);
    const json = JSON.parse(renderJson(result)) as { changes: Array<{ name: string; released: boolean }> };
    expect(json.changes.map((c) => [c.name, c.released])).toEqual([
      ['retired', true],
      ['stranger', false],
    ]);
  });

  it('puts the health notes (rollouts not healthy, read from their revision) in every format; nothing to write is not "matches"', () => {
    const note = {
      kind: 'Deployment' as const,
      name: 'web',
      status: 'degraded' as const,
      reason: 'RevisionBuildFailed' as const,
      message: 'revision r2 ended BUILD_FAILED; the active revision stays the last good one',
      revisionId: 'r2',
      revisionStatus: 'BUILD_FAILED',
    };
    const failed: Plan = { ...noChanges(0), health: [note] };
    const line =
      'Deployment/web: health degraded (RevisionBuildFailed): revision r2 ended BUILD_FAILED; the active revision stays the last good one';
    expect(renderText(failed, { color: false })).toContain(`Health:\n  ${line}`);
    expect(renderText(failed, { color: false })).toContain('No changes to write, but 1 rollout failed (see Health).');
    expect(renderText(failed, { color: false })).not.toContain('Live state matches the manifests');
    expect(renderMarkdown(failed)).toContain(`#### Health\n\n- ${line.replace(/_/g, '\\_')}`);
    expect((JSON.parse(renderJson(failed)) as { health: unknown[] }).health).toEqual([note]);
  });

  it("puts the plan's notes in every format", () => {
    const noted: Plan = { ...noChanges(0), notes: ['applied state not read: no Redis configured'] };
    expect(renderText(noted, { color: false })).toMatch(/^Note: applied state not read: no Redis configured\n/);
    expect(renderMarkdown(noted)).toContain('> **Note:** applied state not read: no Redis configured');
    expect((JSON.parse(renderJson(noted)) as { notes: string[] }).notes).toEqual([
      'applied state not read: no Redis configured',
    ]);
  });
});

describe('secrets never rendered', () => {
  const known = [OPENAI_VALUE, OPENAI_OLD_VALUE, SLACK_SECRET_VALUE];
  const hashes = [
    hashOf('support-agent', 'OPENAI_API_KEY', OPENAI_VALUE),
    hashOf('support-agent', 'OPENAI_API_KEY', OPENAI_OLD_VALUE),
    hashOf('new-agent', 'OPENAI_API_KEY', OPENAI_VALUE),
    hashOf('slack', 'client_secret', SLACK_SECRET_VALUE, 'OAuthProvider'),
  ];
  const renderings = (): Array<[string, string]> => {
    const sample = samplePlan();
    return [
      ['text', renderText(sample, { color: false })],
      ['text+color', renderText(sample, { color: true })],
      ['markdown', renderMarkdown(sample)],
      ['json', renderJson(sample)],
      ['plan object', JSON.stringify(sample)],
    ];
  };

  it('the sample plan did compare secrets (so the check below is meaningful)', () => {
    expect(renderJson(samplePlan())).toContain('"path": "secrets.OPENAI_API_KEY"');
  });

  it.each(renderings())('%s holds no secret value and no secret hash', (_name, output) => {
    for (const needle of [...known, ...hashes]) expect(output).not.toContain(needle);
    expect(output).not.toMatch(/[0-9a-f]{64}/);
  });
});

describe('a secret moved to another source', () => {
  // a literal (--allow-literal-secrets) is named as one; a file replaced it: each side whole, since the kind changed
  const moved: Plan = {
    format_version: '1',
    summary: { create: 0, update: 1, adopt: 0, delete: 0, noop: 0, orphan: 0, blocked: 0, suspended: 0 },
    changes: [
      {
        kind: 'Deployment',
        name: 'billing',
        action: 'update',
        new_revision: true,
        reason: null,
        fields: [
          {
            path: 'secrets.TOKEN',
            before: '(sensitive)',
            after: '(sensitive)',
            sensitive: true,
            source: { before: { literal: true }, after: { file: '/run/secrets/token' } },
          },
        ],
      },
    ],
    diagnostics: [],
  };

  it('is one line under the secret in text, each side after its value in markdown, names in JSON', () => {
    expect(renderText(moved, { color: false })).toContain(
      '      ~ secrets.TOKEN: (sensitive) -> (sensitive)\n          value: a literal in the manifest -> valueFrom.file: /run/secrets/token\n',
    );
    expect(renderMarkdown(moved)).toContain(
      '- secrets.TOKEN: (sensitive) (value: a literal in the manifest)\n+ secrets.TOKEN: (sensitive) (valueFrom.file: /run/secrets/token)\n',
    );
    const [field] = (JSON.parse(renderJson(moved)) as { changes: Array<{ fields: unknown[] }> }).changes[0]!.fields;
    expect(field).toEqual({
      path: 'secrets.TOKEN',
      before: '(sensitive)',
      after: '(sensitive)',
      sensitive: true,
      source: { before: { literal: true }, after: { file: '/run/secrets/token' } },
    });
  });
});
