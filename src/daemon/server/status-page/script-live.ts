// The status page's script, part four (browser JavaScript as text): follows /status by polling with If-None-Match.
// An unchanged document answers 304 with no body, so the page re-renders only when something changed; a changed one
// carries only the rows and top-level fields changed since the page's sequence token (docs/contracts.md §5), merged here,
// a changed plan as the runs changed since (planDelta), and a changed list of keys as the keys added and removed since
// (keysDelta), merged by script-plan.ts. It asks in format 2 (script-format.ts makes each answer whole again), and
// first for a first window of rows, drawn while the whole document comes.

/** Browser JavaScript; joined with the other parts into one IIFE by page-script.ts. */
export const SCRIPT_LIVE = String.raw`
/** How often the open page asks for /status (a change shows within about this long), and after a failed poll. */
const POLL_MS = 1000;
const RETRY_MS = 3000;
let etag = null;
/** The sequence token of what the page holds, its rows by key (in the order first seen) and its other top-level fields. */
let sequence = '';
const rowsByKey = new Map();
let heldFields = {};
let timer = null;
let lostSince = null;
let lastChange = null;
let renders = 0;

function setLive() {
  const live = byId('live');
  if (lostSince) {
    live.className = 'live lost';
    live.dataset.state = 'lost';
    live.textContent = 'Cannot reach the daemon since ' + timeText(lostSince) + '; retrying. The view below may be out of date.';
    return;
  }
  live.className = 'live';
  live.dataset.state = 'live';
  live.textContent = 'Live: following /status' + (lastChange ? ', last change shown at ' + timeText(lastChange) : '');
}

/** What the problems list was drawn from: drawn again only when the plan or the rows held at their last good version change. */
let problemsFrom = null;

function render(doc) {
  renderHeader(doc);
  const held = doc.resources.filter((row) => row.heldAtLastGood).map((row) => row.key + ' ' + row.file).join('\n');
  if (!problemsFrom || problemsFrom.plan !== doc.plan || problemsFrom.held !== held) {
    renderProblems(doc);
    problemsFrom = { plan: doc.plan, held };
  }
  renderRows(doc);
  renderOrphans(doc);
  applyFilter();
  // The document the page shows, for a reader at the console (and the e2e test: it equals a full /status).
  window.statusDocument = doc;
  renders += 1;
  document.body.dataset.renders = String(renders);
  if (renders === 1) performance.mark('status-page-rendered');
}

/**
 * The document the page holds: a delta's rows, fields and removals merged into what it held (a full answer replaces
 * it); a plan that came whole is held by run, and a planDelta merged into it (a new object only then); the lists of
 * keys likewise, with a keysDelta.
 */
function merged(doc) {
  const view = doc.view || { delta: false, removed: [], removedFields: [], sequence: '' };
  if (!view.delta) {
    rowsByKey.clear();
    heldFields = {};
    planRunsHeld = {};
    keyRunsHeld = {};
  }
  for (const key of view.removed || []) rowsByKey.delete(key);
  for (const row of doc.resources || []) rowsByKey.set(row.key, row);
  for (const name of view.removedFields || []) {
    delete heldFields[name];
    delete keyRunsHeld[name];
  }
  const fields = Object.keys(doc).filter((name) => name !== 'resources' && name !== 'view');
  for (const name of fields) if (name !== 'planDelta' && name !== 'keysDelta') heldFields[name] = doc[name];
  sequence = view.sequence || '';
  if ('plan' in doc) holdPlan(doc.plan);
  holdKeys(doc);
  // Runs that do not chain: the next poll asks for the whole document (no token).
  if (doc.planDelta) {
    const plan = mergedPlan(doc.planDelta);
    if (plan) heldFields.plan = plan;
    else sequence = '';
  }
  if (doc.keysDelta) {
    const lists = mergedKeys(doc.keysDelta);
    if (lists) Object.assign(heldFields, lists);
    else sequence = '';
  }
  document.body.dataset.delta = String(Boolean(view.delta));
  document.body.dataset.received = String((doc.resources || []).length);
  document.body.dataset.receivedFields = fields.join(' ');
  return Object.assign({}, heldFields, { resources: [...rowsByKey.values()], view });
}

function schedule(ms) {
  clearTimeout(timer);
  if (!document.hidden) timer = setTimeout(poll, ms);
}

/** The rows of the page's first answer: a first window (and no plan), drawn while the whole document comes. */
const FIRST_WINDOW = 200;
/** True until a whole answer was merged: the first poll asks for a first window, the next at once for the whole. */
let firstWindow = true;

/** The /status the page asks for: a first window of rows, or the answer since the token it holds (format 2). */
function statusPath() {
  if (firstWindow) return '/status?format=2&first=' + FIRST_WINDOW;
  return '/status?format=2&plan=delta&keys=delta&since=' + encodeURIComponent(sequence);
}

/** One poll: a failed request is "cannot reach the daemon"; a failed render is the page's own error (thrown, so the console shows it). */
async function poll() {
  clearTimeout(timer);
  let doc = null;
  let status = 0;
  const windowOnly = firstWindow;
  try {
    const headers = etag && !windowOnly ? { 'If-None-Match': etag } : {};
    const res = await fetch(statusPath(), { headers, cache: 'no-store' });
    status = res.status;
    if (status !== 304) {
      if (!res.ok) throw new Error('/status answered ' + status);
      doc = decodeStatus(await res.json());
      if (renders === 0) performance.mark('status-page-loaded');
      if (!windowOnly) etag = res.headers.get('etag');
    }
  } catch {
    if (!lostSince) {
      lostSince = new Date();
      setLive();
    }
    schedule(RETRY_MS);
    return;
  }
  // After a first window, the whole document at once: the next poll asks without a token.
  firstWindow = false;
  schedule(windowOnly ? 0 : POLL_MS);
  const wasLost = lostSince !== null;
  lostSince = null;
  if (doc) {
    lastChange = new Date();
    render(merged(doc));
    if (windowOnly) sequence = '';
    else if (document.body.dataset.whole !== 'true') {
      document.body.dataset.whole = 'true';
      performance.mark('status-page-whole');
    }
  }
  if (wasLost || doc) setLive();
}

function start() {
  const filter = byId('filter');
  filter.addEventListener('input', applyFilter);
  filter.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && filter.value !== '') {
      filter.value = '';
      applyFilter();
    }
  });
  document.addEventListener('keydown', (event) => {
    const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement;
    if (event.key === '/' && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      filter.focus();
    }
  });
  // A hidden tab stops asking; it asks at once when shown again.
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) clearTimeout(timer);
    else void poll();
  });
  void poll();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
`;
