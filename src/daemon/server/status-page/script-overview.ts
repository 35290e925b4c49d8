// The status page's script, part one (browser JavaScript as text): DOM helpers, the header, manifest problems, orphans.
// Every text from /status goes into the page through textContent or an attribute, never as markup.

/** Browser JavaScript; joined with the other parts into one IIFE by page-script.ts. */
export const SCRIPT_OVERVIEW = String.raw`
const SYNC_TONE = { synced: 'ok', out_of_sync: 'warn', blocked: 'bad', suspended: 'off' };
const HEALTH_TONE = { healthy: 'ok', progressing: 'info', degraded: 'bad', unknown: 'off' };

/** The prune settings (their own line beside Settings): off, or its mode and grace. */
function pruneText(prune) {
  if (!prune || !prune.enabled) return 'off';
  return 'mode ' + prune.mode + (prune.mode === 'auto' ? ', deletes after ' + Math.round(prune.graceMs / 100) / 10 + ' s undeclared (prune_grace)' : ': each delete waits for converge reconcile --confirm-delete NAME');
}

function byId(id) {
  return document.getElementById(id);
}

/** An element with a class and text (text only: never markup). */
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/**
 * An element holding a file path, a resource name or a job id: a break opportunity (<wbr>) after each separator
 * ('/', '.', '-', '_', '@', ':'), so a narrow column wraps it there and never mid-word; the whole value in its title.
 */
function breakable(tag, className, text) {
  const node = el(tag, className);
  const value = String(text);
  for (const part of value.split(/(?<=[\/.\-_@:])/)) {
    if (node.lastChild) node.append(document.createElement('wbr'));
    node.append(document.createTextNode(part));
  }
  node.title = value;
  return node;
}

/** "1 job", "2 jobs": a count and its noun in agreement. */
function counted(n, one, many) {
  return n + ' ' + (n === 1 ? one : many || one + 's');
}

/** A refused prune's warning: the reason already opens with "prune refused", so it is said once. */
function pruneRefusedText(reason) {
  return /^prune refused/i.test(reason) ? 'P' + reason.slice(1) : 'Prune refused: ' + reason;
}

function add(parent, ...children) {
  for (const child of children) if (child !== null && child !== undefined) parent.append(child);
  return parent;
}

/** A status word in a pill; the colour only adds to the word. */
function badge(word, tone) {
  return el('span', 'badge ' + (tone || 'off'), word);
}

function pad(n) {
  return String(n).padStart(2, '0');
}

/** A Date as local "YYYY-MM-DD HH:MM:SS": the one time format of the page (header, rows, the live line). */
function timeText(d) {
  return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
}

/** An ISO time as local "YYYY-MM-DD HH:MM:SS" in a <time> (the ISO text in its title). */
function when(iso) {
  if (!iso) return el('span', 'muted', '—');
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return el('span', null, iso);
  const text = timeText(d);
  const node = el('time', null, text);
  node.dateTime = iso;
  node.title = iso;
  return node;
}

function shortId(id) {
  return id && id.length > 12 ? id.slice(0, 8) : id;
}

function fact(list, term, ...value) {
  add(list, el('dt', null, term), add(el('dd'), ...value));
}

function versionText(version) {
  if (!version) return el('span', 'muted', 'not read yet');
  // The label is the server's (one rendering for every place a version is shown): "3f2a9c1", "uncommitted changes
  // on top of 3f2a9c1" or "content 1a2b3c4d5e6f"; the full id is the code's title.
  const code = el('code', null, version.label || version.id);
  code.title = version.id;
  return add(el('span'), version.kind !== 'git' ? 'not in git, ' : version.uncommitted ? '' : 'commit ', code, ', read ', when(version.readAt));
}

function leaderText(lease) {
  if (!lease) return el('span', 'muted', 'no lease yet');
  const leader = lease.leader;
  const out = el('span');
  if (!leader) add(out, el('span', 'muted', 'no leader'));
  else add(out, el('code', null, leader.holder), ', fencing token ', el('code', null, leader.token), ', since ', when(leader.since));
  add(out, el('span', 'reason', lease.leading ? 'this replica leads' : 'this replica (' + lease.replica + ') is a standby: its rows may be behind the leader\'s'));
  return out;
}

function reconcileText(doc) {
  const last = doc.lastReconcile;
  if (!last) return el('span', 'muted', 'none yet');
  const out = add(el('span'), '#' + last.id + ' ', el('strong', null, last.trigger), ', ', when(last.finishedAt), ', took ' + last.durationMs + ' ms, ');
  if (last.ok) add(out, badge('ok', 'ok'));
  else add(out, badge('failed', 'bad'), ' ', el('span', null, last.error || ''));
  if (doc.reconciles) add(out, el('span', 'reason', counted(doc.reconciles.total, 'reconcile') + ', ' + doc.reconciles.failed + ' failed'));
  return out;
}

function renderHeader(doc) {
  const daemon = doc.daemon || {};
  byId('version').textContent = daemon.version ? 'v' + daemon.version : '';
  const facts = byId('facts');
  facts.replaceChildren();
  fact(facts, 'Watched directory', breakable('code', null, daemon.dir));
  fact(facts, 'Service', el('code', null, daemon.service || '—'), daemon.embedded ? ' (embedded emulator)' : '');
  fact(facts, 'Manifests', versionText(doc.manifestVersion));
  fact(facts, 'Leader', leaderText(doc.lease));
  fact(facts, 'Last reconcile', reconcileText(doc));
  fact(facts, 'Settings', 'drift ' + daemon.driftPolicy + ', resync every ' + Math.round((daemon.resyncMs || 0) / 1000) + ' s');
  fact(facts, 'Daemon', 'pid ' + daemon.pid + ' on ', el('code', null, daemon.hostname), ', started ', when(daemon.startedAt));
  fact(facts, 'Prune', pruneText(daemon.prune));
  renderCounts('sync-counts', doc.sync, SYNC_TONE);
  renderCounts('health-counts', doc.health, HEALTH_TONE);
  renderDeleteCounts(doc);
  renderWarnings(doc);
}

function renderCounts(id, counts, tones) {
  const list = byId(id);
  list.replaceChildren();
  for (const [word, n] of Object.entries(counts || {})) list.append(add(el('li'), badge(word, tones[word]), el('strong', null, n)));
}

/** The deletes that wait for their grace or a person (deletesPending), and the confirmed ones whose job is queued. */
function renderDeleteCounts(doc) {
  const pending = (doc.deletesPending || []).length;
  const deleting = (doc.resources || []).filter(isDeleting).length;
  const counts = {};
  if (pending > 0) counts.DeletePending = pending;
  if (deleting > 0) counts.Deleting = deleting;
  renderCounts('delete-counts', counts, { DeletePending: 'warn', Deleting: 'info' });
  byId('deletes').hidden = pending + deleting === 0;
}

/** A delete that was decided and enqueued (its grace passed, or a person confirmed it) and has not finished yet. */
function isDeleting(row) {
  return row.action === 'delete' && row.sync.reason !== 'DeletePending' && Boolean(row.job) && row.job.operation.startsWith('delete') && row.job.state === 'queued';
}

function renderWarnings(doc) {
  const list = byId('warnings');
  list.replaceChildren();
  const warn = (text) => list.append(el('li', null, text));
  if (doc.daemon && doc.daemon.stopping) warn('The daemon is stopping.');
  if (doc.manifests && doc.manifests.error) warn('Manifests could not be read: ' + doc.manifests.error);
  if (doc.pruneRefused) warn(pruneRefusedText(doc.pruneRefused));
  if (doc.window && doc.window.blocked && doc.window.message) warn('Change window: ' + doc.window.message + '.');
  if (doc.appliedState && doc.appliedState.lost) warn('Applied state lost' + (doc.appliedState.lostAt ? ' at ' + doc.appliedState.lostAt : '') + ': ' + (doc.appliedState.detail || 'nothing is rewritten blind'));
}

/** The diagnostics of the last plan (every file that fails to load, at file:line:column), and files kept at their last good version. */
function renderProblems(doc) {
  const list = byId('problem-list');
  list.replaceChildren();
  const diagnostics = (doc.plan && doc.plan.diagnostics) || [];
  const byFile = new Map();
  for (const d of diagnostics) {
    if (!byFile.has(d.file)) byFile.set(d.file, []);
    byFile.get(d.file).push(d);
  }
  for (const [file, found] of byFile) {
    const item = add(el('li'), el('strong', 'mono', file));
    for (const d of found) item.append(diagnosticLine(d));
    list.append(item);
  }
  for (const row of doc.resources || []) {
    if (row.heldAtLastGood) list.append(add(el('li'), el('strong', 'mono', row.file || row.key), ': fails to load; ' + row.key + ' stays at its last good version'));
  }
  byId('problems').hidden = list.childElementCount === 0;
}

function diagnosticLine(d) {
  const tone = d.severity === 'error' ? 'bad' : 'warn';
  return add(el('div', 'diag'), el('code', null, d.file + ':' + d.line + ':' + d.column), ' ', badge(d.severity, tone), ' ', el('span', null, d.message));
}

function renderOrphans(doc) {
  const body = byId('orphan-rows');
  body.replaceChildren();
  const changes = (doc.plan && doc.plan.changes) || [];
  for (const key of doc.orphans || []) {
    const slash = key.indexOf('/');
    const kind = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const change = changes.find((c) => c.kind === kind && c.name === name);
    const tr = add(el('tr', 'orphan'), el('td', null, kind), el('td', null, name), el('td', null, change && change.reason ? change.reason : 'orphan'));
    tr.dataset.key = key;
    tr.dataset.search = (key + ' orphan ' + (change && change.reason ? change.reason : '')).toLowerCase();
    body.append(tr);
  }
  byId('orphans').hidden = body.childElementCount === 0;
}
`;
