// The dependency rule of docs/architecture.md as a dependency-cruiser config (`npm run depcheck`, run by .ci/run).
//
// FOLDERS below is the table of docs/architecture.md, row for row: which of our folders each folder may
// import, which npm packages and which node builtins. Everything a row does not name is forbidden.
// Type-only imports count (tsPreCompilationDeps). Tests (*.test.ts) are not cruised: the rule is about
// the code that ships.

/** @typedef {{ ours: string[], typesOnly?: string[], npm: string[] | 'any', builtins: string[] | 'any' }} FolderRule */

/** @type {Record<string, FolderRule>} */
const FOLDERS = {
  // node:crypto and no other builtin: hashing is computation, not I/O
  core: { ours: [], npm: ['zod', 'yaml', 'cron-parser'], builtins: ['crypto'] },
  plan: { ours: ['core'], npm: [], builtins: [] },
  secrets: { ours: ['core'], npm: [], builtins: ['fs', 'path', 'util'] },
  // @opentelemetry/api: the spans of requests and jobs (src/service/trace.ts); the SDK is the CLI's only (src/cli/tracing-sdk.ts)
  service: { ours: ['core'], npm: ['undici', 'zod', '@opentelemetry/api'], builtins: 'any' },
  // observe runs plan: the corridor of a reconcile (src/observe/corridor.ts) plans and decides what it loaded
  observe: { ours: ['core', 'plan', 'secrets', 'service', 'discovery'], npm: [], builtins: 'any' },
  sync: { ours: ['core', 'secrets', 'service'], npm: [], builtins: [] },
  store: { ours: ['core'], npm: ['ioredis', 'zod'], builtins: 'any' },
  leader: { ours: ['core'], npm: ['ioredis'], builtins: 'any' },
  // src/jobs is the one folder that imports bullmq: queue/ (job ids and payloads, the enqueuer, job events, the resync
  // scheduler, bounded queues beside the jobs), runner/ (the BullMQ workers), and open-jobs.ts, the door that opens both
  jobs: {
    ours: ['core', 'plan', 'secrets', 'service', 'sync', 'store', 'leader'],
    npm: ['bullmq', 'ioredis', 'zod'],
    builtins: 'any',
  },
  'jobs/queue': { ours: ['core', 'store'], npm: ['bullmq', 'ioredis', 'zod'], builtins: 'any' },
  'jobs/runner': {
    ours: ['core', 'plan', 'secrets', 'service', 'sync', 'store', 'leader', 'jobs/queue'],
    npm: ['bullmq', 'ioredis'],
    builtins: 'any',
  },
  apply: {
    ours: ['core', 'observe', 'service', 'sync', 'store', 'jobs/queue'],
    typesOnly: ['jobs/runner', 'jobs/open-jobs.ts'],
    npm: [],
    builtins: 'any',
  },
  daemon: {
    ours: ['core', 'plan', 'observe', 'secrets', 'service', 'store', 'leader', 'jobs', 'notify'],
    npm: ['chokidar', 'pino', 'pino-pretty', 'prom-client', '@opentelemetry/api'],
    builtins: 'any',
  },
  // the inner reconcile (gather, decide, act) sees none of the daemon's other rooms: status, server, lifecycle, watch
  'daemon/cycle': { ours: ['core', 'plan', 'observe', 'service', 'store', 'jobs/queue'], npm: [], builtins: [] },
  discovery: { ours: ['core'], npm: ['@modelcontextprotocol/sdk', 'undici'], builtins: 'any' },
  emulator: { ours: ['core', 'discovery'], npm: ['zod', 'yaml'], builtins: 'any' },
  // notifications as one feature (pure parts in core/notify): events from what the daemon publishes, the delivery
  // queues (through src/jobs/queue/bounded-queues.ts, not bullmq), the sender (HTTP to receivers through undici)
  notify: {
    ours: ['core', 'service', 'store', 'jobs/queue'],
    npm: ['undici', 'zod', 'pino', 'prom-client'],
    builtins: 'any',
  },
};
// cli wires everything: it may import every other folder (and nothing imports it: see nothing-imports-cli)
FOLDERS.cli = { ours: Object.keys(FOLDERS), npm: 'any', builtins: 'any' };

const KNOWN = Object.keys(FOLDERS);

/** A regex matching the files of the given folders of src (a name ending in .ts: that one file). */
function inFolders(names) {
  const parts = names.map((name) => (name.endsWith('.ts') ? `${name.replace(/\./g, '\\.')}$` : `${name}/`));
  return `^src/(${parts.join('|')})`;
}

/** A regex matching an npm package's files or its @types, wherever node_modules sits (it may be a symlink). */
function inPackages(names) {
  const escaped = names.map((name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
  return `(^|/)node_modules/(@types/)?(${escaped.join('|')})/`;
}

/** The rules of one row of the table. */
function folderRules(folder, rule) {
  const from = { path: inFolders([folder]) };
  const rules = [];
  const allowed = [...rule.ours, ...(rule.typesOnly ?? [])].map((name) => `src/${name}`);
  rules.push({
    name: `${folder}-imports-only-its-folders`,
    comment: `src/${folder} may import ${allowed.length ? allowed.join(', ') : 'none of our other folders'} (docs/architecture.md)`,
    severity: 'error',
    from,
    to: { path: '^src/', pathNot: inFolders([folder, ...rule.ours, ...(rule.typesOnly ?? [])]) },
  });
  if (rule.typesOnly) {
    rules.push({
      name: `${folder}-imports-only-types-of-${rule.typesOnly.join('-')}`,
      comment: `src/${folder} may import only types from ${rule.typesOnly.map((name) => `src/${name}`).join(', ')} (import type)`,
      severity: 'error',
      from,
      to: { path: inFolders(rule.typesOnly), dependencyTypesNot: ['type-only'] },
    });
  }
  if (rule.npm !== 'any') {
    rules.push({
      name: `${folder}-imports-only-its-packages`,
      comment: `src/${folder} may import ${rule.npm.length ? `only these npm packages: ${rule.npm.join(', ')}` : 'no npm package'} (docs/architecture.md)`,
      severity: 'error',
      from,
      to: rule.npm.length
        ? { path: '(^|/)node_modules/', pathNot: inPackages(rule.npm) }
        : { path: '(^|/)node_modules/' },
    });
  }
  if (rule.builtins !== 'any') {
    rules.push({
      name: `${folder}-imports-only-its-builtins`,
      comment: `src/${folder} may import ${rule.builtins.length ? `only these node builtins: ${rule.builtins.map((name) => `node:${name}`).join(', ')}` : 'no node builtin'} (docs/architecture.md)`,
      severity: 'error',
      from,
      to: rule.builtins.length
        ? { dependencyTypes: ['core'], pathNot: `^(${rule.builtins.join('|')})$` }
        : { dependencyTypes: ['core'] },
    });
  }
  return rules;
}

module.exports = {
  forbidden: [
    ...Object.entries(FOLDERS).flatMap(([folder, rule]) => folderRules(folder, rule)),
    {
      name: 'bullmq-only-in-jobs',
      comment:
        'BullMQ is one feature in one folder: only src/jobs imports bullmq; others use its API (docs/architecture.md)',
      severity: 'error',
      from: { path: '^src/', pathNot: inFolders(['jobs']) },
      to: { path: inPackages(['bullmq']) },
    },
    {
      name: 'nothing-imports-cli',
      comment: 'src/cli is argument parsing and wiring: nothing imports it (docs/architecture.md)',
      severity: 'error',
      from: { pathNot: inFolders(['cli']) },
      to: { path: inFolders(['cli']) },
    },
    {
      name: 'no-cycle-between-folders',
      comment: 'there is no import cycle between folders (docs/architecture.md)',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-cycle-between-files',
      comment:
        'there is no import cycle between files of src (docs/architecture.md): move what both need to a module of its own',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'only-known-folders',
      comment: `code in src lives in one of the folders of docs/architecture.md: ${KNOWN.join(', ')}`,
      severity: 'error',
      from: { path: '^src/', pathNot: inFolders(KNOWN) },
      to: {},
    },
    {
      name: 'only-known-folders-orphan',
      comment: `code in src lives in one of the folders of docs/architecture.md: ${KNOWN.join(', ')}`,
      severity: 'error',
      from: { path: '^src/', pathNot: inFolders(KNOWN), orphan: true },
      to: {},
    },
    {
      name: 'no-unresolvable-import',
      comment: 'an import the cruiser cannot resolve could hide a violation: fix the import or the resolution options',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: '(^|/)node_modules/' },
    exclude: { path: '\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
  },
};
