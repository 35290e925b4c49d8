// The status page's script, part two (browser JavaScript as text): one table row per resource and its detail, built from
// a /status row; script-window.ts decides which rows are drawn.

/** Browser JavaScript; joined with the other parts into one IIFE by page-script.ts. */
export const SCRIPT_ROWS = String.raw`
/** The keys whose detail is open (kept while the row is filtered out or scrolled away). */
const openKeys = new Set();
let detailCount = 0;

/** The command that releases a hold, a Conflict or SecretsUnknown (docs/daemon.md), with --url when not the default. */
function releaseCommand(flag, target) {
  const origin = window.location.origin;
  const url = origin === 'http://127.0.0.1:8080' || origin === 'http://localhost:8080' ? '' : ' --url ' + origin;
  return 'converge reconcile ' + flag + ' ' + target + url;
}

/** Said beside a release command while the daemon's POST /reconcile is off: the command would be refused. */
const RECONCILE_OFF = 'POST /reconcile is off on this daemon, so this command is refused: restart the daemon with CONVERGE_WEBHOOK_TOKEN set, and give the same value to the command';

/** What holds a resource back, and how to release it (off: the daemon's POST /reconcile is off); null when nothing does. */
function holdOf(row, target, off) {
  if (row.hold) return { word: row.hold.reason, message: row.hold.message, command: releaseCommand('--retry-failed', target), off };
  if (row.syncReason === 'Conflict') return { word: 'Conflict', message: row.conflict ? row.conflict.message : row.reason, command: releaseCommand('--retry-failed', target), off };
  if (row.syncReason === 'SecretsUnknown') return { word: 'SecretsUnknown', message: row.reason, command: releaseCommand('--write-secrets', target), off };
  if (row.heldAtLastGood) return { word: 'LastGoodVersion', message: 'its file fails to load: the last good version stays in force', command: null };
  // The reason opens with "delete pending: " (src/core/prune-grace.ts), which the detail's label says already.
  if (row.pendingDelete && row.sync.reason === 'DeletePending') return { word: 'DeletePending', message: (row.reason || '').replace(/^delete pending:\s*/i, ''), command: row.pendingDelete.confirm ? releaseCommand('--confirm-delete', target) : null, deletePending: true };
  if (row.pruneKept) return { word: 'Kept', message: 'converge/prune: "false": prune never deletes it', command: null };
  return null;
}

/** The last plan's diagnostics indexed once per render: by file, by line:column, and whether a file fails to load. */
function diagnosticIndex(doc) {
  const all = (doc.plan && doc.plan.diagnostics) || [];
  const byFile = new Map();
  const byPlace = new Map();
  all.forEach((d, i) => {
    const item = { d, i, at: d.file + ':' + d.line + ':' + d.column };
    if (!byFile.has(d.file)) byFile.set(d.file, []);
    byFile.get(d.file).push(item);
    const place = d.line + ':' + d.column;
    if (!byPlace.has(place)) byPlace.set(place, []);
    byPlace.get(place).push(item);
  });
  return { byFile, byPlace, loadFails: all.some((d) => d.severity === 'error') };
}

/** The diagnostics (with their order in the plan) whose file:line:column the text holds. */
function diagnosticsIn(index, text) {
  const found = [];
  // Every line:column in the text, overlapping (a file name may end in digits).
  for (const place of new Set([...text.matchAll(/(?=(\d+:\d+))/g)].map((m) => m[1]))) {
    for (const item of index.byPlace.get(place) || []) if (text.includes(item.at)) found.push(item);
  }
  return found;
}

/** What the page knows of one resource beyond its row: its planned change, build log and diagnostics. */
function partsOf(doc, row, names, changes, index) {
  const change = changes.get(row.key) || null;
  const log = (doc.failedBuildLogs || {})[row.key] || null;
  const reason = (row.reason || '') + ' ' + (row.error || '');
  const mine = new Map([...(index.byFile.get(row.file) || []), ...diagnosticsIn(index, reason)].map((item) => [item.i, item.d]));
  const diagnostics = [...mine].sort((a, b) => a[0] - b[0]).map(([, d]) => d);
  // A row without a file takes one only from its own error's position (a blocked resource's file); a row whose file is
  // unknown because another file fails to load (its manifest gone, or in that file) never shows that other file.
  const unknown = /^unknown:/.test(row.error || '');
  // An emptied file (src/plan/prune.ts emptiedReason: "unknown: a.yaml:1:1 declares nothing now") failed nothing.
  const emptied = /^unknown: .*? declares? nothing now/.test(row.error || '');
  const own = row.file || unknown ? null : (diagnosticsIn(index, row.error || '').sort((a, b) => a.i - b.i)[0] || { d: null }).d;
  const loadFails = index.loadFails;
  const target = names.get(row.name) > 1 ? row.key : row.name;
  const reconcileOff = Boolean(doc.daemon && doc.daemon.reconcileEndpoint === false);
  return { change, log, diagnostics, target, reconcileOff, file: row.file || (own ? own.file : null), fileUnknown: !row.file && !own && (unknown || loadFails) ? (emptied ? 'emptied' : 'fails') : null };
}

function cell(...children) {
  return add(el('td'), ...children);
}

/** Why a row's file is unknown: a file that declared it is present and empty, or a file fails to load. */
const UNKNOWN_FILE = { emptied: 'unknown (a file that declared it is empty)', fails: 'unknown (a file fails to load)' };

function fileCell(file, unknown) {
  const td = cell(file ? breakable('code', null, file) : unknown ? el('span', 'muted', UNKNOWN_FILE[unknown]) : dash());
  td.className = 'file';
  return td;
}

function dash() {
  return el('span', 'muted', '—');
}

function conditionCell(condition, tones) {
  return cell(badge(condition.status, tones[condition.status]), el('span', 'reason', condition.reason));
}

/** The sync cell: a delete enqueued (confirmed, or its grace passed) reads deleting until its job ends, not its last sync. */
function syncCell(row) {
  if (isDeleting(row)) return cell(badge('deleting', 'info'), el('span', 'reason', 'Deleting'));
  // Its delete job finished: gone from the service; the next reconcile drops the row.
  if (row.action === 'delete' && row.job && row.job.state === 'completed' && row.job.outcome === 'deleted') return cell(badge('deleted', 'off'), el('span', 'reason', 'Deleted'));
  return conditionCell(row.sync, SYNC_TONE);
}

/** A command as words that each stay whole: it wraps at its spaces only (never inside --url or the URL). */
function commandCode(command) {
  const code = el('code', 'cmd');
  command.split(' ').forEach((word, i) => {
    if (i > 0) code.append(document.createTextNode(' '));
    code.append(el('span', 'word', word));
  });
  return code;
}

function revisionCell(health) {
  if (!health.revisionId) return cell(dash());
  const id = el('code', null, shortId(health.revisionId));
  id.title = health.revisionId;
  const tone = health.status === 'degraded' ? 'bad' : health.status === 'healthy' ? 'ok' : 'info';
  return cell(id, health.revisionStatus ? add(el('span', 'reason'), badge(health.revisionStatus, tone)) : null);
}

function jobCell(job) {
  if (!job) return cell(dash());
  const word = job.state === 'completed' ? job.outcome || 'completed' : job.state;
  const tone = job.state === 'failed' ? 'bad' : job.state === 'queued' ? 'info' : 'ok';
  return cell(badge(word, tone), add(el('span', 'reason'), job.operation + ' ', job.finishedAt ? when(job.finishedAt) : 'not finished'));
}

function holdCell(hold) {
  if (!hold) return cell(dash());
  return cell(badge(hold.word, 'warn'), hold.command ? commandCode(hold.command) : null, hold.command && hold.off ? el('span', 'reason off', RECONCILE_OFF) : null);
}

function driftCell(drift) {
  if (!drift || !drift.fields || drift.fields.length === 0) return cell(dash());
  return cell(...drift.fields.map((f) => breakable('code', 'path', f)), el('span', 'reason', drift.policy));
}

/** The words the filter matches (name, kind, file, status words). */
function searchText(row, parts, hold) {
  const words = [row.key, row.kind, row.name, parts.file || '', row.action, row.state, row.sync.status, row.sync.reason, row.health.status, row.health.reason,
    row.health.revisionStatus || '', row.health.revisionId || '', hold ? hold.word : '', row.drift ? 'drift drifted ' + row.drift.fields.join(' ') : '',
    row.job ? row.job.state + ' ' + (row.job.outcome || '') : ''];
  return words.join(' ').toLowerCase();
}

function buildRow(row, parts, hold, detailId) {
  const button = breakable('button', 'expand', row.name);
  button.type = 'button';
  button.setAttribute('aria-expanded', String(openKeys.has(row.key)));
  button.setAttribute('aria-controls', detailId);
  button.addEventListener('click', () => toggle(row.key));
  const tr = add(el('tr', 'row'), cell(row.kind), cell(button), fileCell(parts.file, parts.fileUnknown),
    syncCell(row), conditionCell(row.health, HEALTH_TONE), revisionCell(row.health), jobCell(row.job), holdCell(hold), driftCell(row.drift));
  tr.dataset.key = row.key;
  tr.dataset.search = searchText(row, parts, hold);
  return tr;
}

function para(label, ...value) {
  return add(el('p'), el('strong', null, label + ': '), ...value);
}

function shown(value) {
  if (value === null || value === undefined) return '(none)';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function changesBlock(change) {
  const out = [el('h4', null, 'Planned change')];
  if (!change || change.fields.length === 0) {
    out.push(el('p', 'muted', change ? change.action + ': no field to change' : 'not in the last plan'));
    return out;
  }
  out.push(el('p', null, change.action + (change.new_revision ? ' (starts a new revision)' : '') + (change.suspended ? ', suspended: shown, not applied' : '')));
  const body = el('tbody');
  for (const f of change.fields) {
    const before = f.sensitive ? '(secret: value not shown)' : shown(f.before);
    const after = f.sensitive ? '(secret: value not shown)' : shown(f.after);
    body.append(add(el('tr'), add(el('td'), el('code', null, f.path)), add(el('td'), el('code', null, before)), el('td', 'arrow', '→'), add(el('td'), el('code', null, after))));
  }
  const head = add(el('thead'), add(el('tr'), el('th', null, 'Field'), el('th', null, 'Live'), add(el('th'), el('span', 'visually-hidden', 'to')), el('th', null, 'Manifest')));
  for (const th of head.querySelectorAll('th')) th.scope = 'col';
  out.push(add(el('table', 'changes'), head, body));
  return out;
}

function buildDetail(row, parts, hold, detailId) {
  const box = el('div', 'detail');
  add(box, el('h4', null, row.key), para('Sync', row.sync.status + ' (' + row.sync.reason + '): ' + row.sync.message),
    para('Health', row.health.status + ' (' + row.health.reason + '): ' + row.health.message));
  if (row.health.revisionId) box.append(para('Latest revision', el('code', null, row.health.revisionId), row.health.revisionStatus ? ' ' + row.health.revisionStatus : ''));
  if (row.error && row.error !== row.sync.message) box.append(para('Error', row.error));
  else if (row.reason && row.reason !== row.sync.message) box.append(para('Note', row.reason));
  if (hold) add(box, para(hold.deletePending ? 'Delete pending' : 'Hold', hold.deletePending ? hold.message || '' : hold.word + (hold.message ? ': ' + hold.message : '')), hold.command ? para(hold.deletePending ? 'Confirm with' : 'Release with', commandCode(hold.command), el('span', 'reason', hold.off ? RECONCILE_OFF : 'needs the daemon\'s CONVERGE_WEBHOOK_TOKEN in the environment')) : null);
  if (row.conflict && row.conflict.fields) box.append(para('Conflicting fields', row.conflict.fields.join(', ')));
  if (row.secretsUnknown && row.secretsUnknown.length > 0) box.append(para('Secrets not compared (names)', row.secretsUnknown.join(', ')));
  if (row.drift) box.append(para('Drift', row.drift.policy + ': ' + row.drift.fields.join(', ') + (row.drift.reason ? ' (' + row.drift.reason + ')' : '')));
  add(box, ...changesBlock(parts.change));
  if (parts.log) {
    add(box, add(el('h4'), 'Build log of failed revision ', el('code', null, parts.log.revisionId), el('span', 'muted', ' (last lines; converge logs ' + row.name + ' --build shows more)')));
    if (parts.log.lines.length > 0) box.append(el('pre', 'log', parts.log.lines.join('\n')));
    if (parts.log.note) box.append(el('p', 'muted', parts.log.note));
  }
  if (parts.diagnostics.length > 0) add(box, el('h4', null, 'Manifest diagnostics'), ...parts.diagnostics.map(diagnosticLine));
  if (row.job) box.append(para('Last job', breakable('code', null, row.job.id), ' ' + row.job.operation + ', ' + (row.job.outcome || row.job.state) + (row.job.message ? ': ' + row.job.message : '') + ', ', when(row.job.finishedAt)));
  if (row.appliedFrom) box.append(para('Applied from', (row.appliedFrom.label || row.appliedFrom.id) + ', written ', when(row.appliedFrom.appliedAt)));
  if (row.deploymentId) box.append(para('Live id', el('code', null, row.deploymentId)));
  box.append(historySection(row));
  const td = add(el('td'), box);
  td.colSpan = 9;
  const tr = add(el('tr', 'detail'), td);
  tr.id = detailId;
  tr.dataset.key = row.key;
  tr.hidden = !openKeys.has(row.key);
  return tr;
}
`;
