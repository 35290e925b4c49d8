// The status page's script, part three (browser JavaScript as text): follows /status by polling with If-None-Match.
// An unchanged document answers 304 with no body, so the page re-renders only when something changed; a changed one
// carries only the rows changed since the page's sequence token (docs/contracts.md "/status queries"), merged here.

/** Browser JavaScript; joined with the other parts into one IIFE by page-script.ts. */
export const SCRIPT_LIVE = String.raw`
/** How often the open page asks for /status (a change shows within about this long), and after a failed poll. */
const POLL_MS = 1000;
const RETRY_MS = 3000;
let etag = null;
/** The sequence token of the rows the page holds, and those rows by key (in the order first seen). */
let sequence = '';
const rowsByKey = new Map();
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

function render(doc) {
  renderHeader(doc);
  renderProblems(doc);
  renderRows(doc);
  renderOrphans(doc);
  applyFilter();
  renders += 1;
  document.body.dataset.renders = String(renders);
  if (renders === 1) performance.mark('status-page-rendered');
}

/** The document with every row the page holds: a delta's rows and removals merged into the rows held. */
function merged(doc) {
  const view = doc.view || { delta: false, removed: [], sequence: '' };
  if (!view.delta) rowsByKey.clear();
  for (const key of view.removed || []) rowsByKey.delete(key);
  for (const row of doc.resources || []) rowsByKey.set(row.key, row);
  sequence = view.sequence || '';
  document.body.dataset.delta = String(Boolean(view.delta));
  document.body.dataset.received = String((doc.resources || []).length);
  return Object.assign({}, doc, { resources: [...rowsByKey.values()] });
}

function schedule(ms) {
  clearTimeout(timer);
  if (!document.hidden) timer = setTimeout(poll, ms);
}

/** One poll: a failed request is "cannot reach the daemon"; a failed render is the page's own error (thrown, so the console shows it). */
async function poll() {
  clearTimeout(timer);
  let doc = null;
  let status = 0;
  try {
    const headers = etag ? { 'If-None-Match': etag } : {};
    const res = await fetch('/status?since=' + encodeURIComponent(sequence), { headers, cache: 'no-store' });
    status = res.status;
    if (status !== 304) {
      if (!res.ok) throw new Error('/status answered ' + status);
      doc = await res.json();
      if (renders === 0) performance.mark('status-page-loaded');
      etag = res.headers.get('etag');
    }
  } catch {
    if (!lostSince) {
      lostSince = new Date();
      setLive();
    }
    schedule(RETRY_MS);
    return;
  }
  schedule(POLL_MS);
  const wasLost = lostSince !== null;
  lostSince = null;
  if (doc) {
    lastChange = new Date();
    render(merged(doc));
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
