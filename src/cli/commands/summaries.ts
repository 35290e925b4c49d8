// Each command's one-line summary, in --help order: read by the command list without loading any command's module.
export const COMMAND_SUMMARIES = {
  validate: 'load and check manifests (no network); exit 1 when any is invalid',
  plan: 'list live state and print what apply would change (dry run)',
  apply:
    'plan, then make the service match the manifests through queued jobs (on a terminal, after "yes"; Ctrl-C stops in order: nothing left locked)',
  comment:
    'post a saved plan as one comment on a pull request (GitHub, Gitea) or merge request (GitLab), updated in place on later runs',
  run: 'the daemon: watch DIR, resync on a timer, apply through jobs, serve /healthz /readyz /metrics /status',
  status: "show a running daemon's last plan and every resource's sync, health and error (from its /status)",
  reconcile:
    'ask a running daemon to reconcile now; --write-secrets also writes secrets it holds back as SecretsUnknown, --retry-failed releases (and rebuilds) resources held after a failed revision, --confirm-delete NAME sends a delete that waits for a person',
  history:
    "a resource's recorded events, newest first: decisions, writes, revisions, holds, conflicts, drift, prunes (reads Redis only)",
  logs: "print a deployment's build or deploy logs from the service (the last lines; --follow for new ones)",
  worker: 'take jobs from the shared queue (more throughput beside apply or run) until SIGTERM',
  notify: 'notify test [NAME]: send one test event to each configured receiver (or NAME) and print what each answered',
  emulator: 'serve the local emulator of the service (until SIGTERM or SIGINT)',
  repos: 'list the code-host repositories the service can see (values for spec.repository and spec.integration)',
  export:
    'write one manifest per live deployment (and OAuth provider) to adopt an existing workspace; secrets as env references, never values',
  schema: 'print the JSON Schema of manifests',
  completion:
    'print a shell completion script (commands, their flags, paths, option values, --target names, history names)',
} as const;
