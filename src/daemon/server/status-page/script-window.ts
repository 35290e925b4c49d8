// The status page's script, part three (browser JavaScript as text): the resource table as a window. Every row the page
// holds is an entry in memory (what it shows and the words the filter matches); the filter runs over those entries, and
// only the rows in and near the viewport are in the DOM, between two spacer rows that stand for the rest.

/** Browser JavaScript; joined with the other parts into one IIFE by page-script.ts. */
export const SCRIPT_WINDOW = String.raw`
/** Rows drawn beyond the viewport, above and below, in pixels: scrolling a screen shows rows already drawn. */
const OVERSCAN_PX = 900;
/** Every row the page holds, in order: { key, row, parts, hold, search, signature }. */
let entries = [];
/** The entries the filter lets through, and the top of each in the table body (offsets[i]; the last is the height). */
let shownEntries = [];
let offsets = [0];
/** The height of each row drawn once (with its open detail), and the estimate for a row not drawn yet. */
const heights = new Map();
let heightSum = 0;
let estimate = 48;
/** The nodes of the rows drawn now, by key: { signature, tr, detail, detailId }. */
const drawnNodes = new Map();
let drawQueued = false;

/** Takes the document's rows in as entries (nothing is drawn here: applyFilter draws). */
function renderRows(doc) {
  const rows = doc.resources || [];
  const names = new Map();
  for (const row of rows) names.set(row.name, (names.get(row.name) || 0) + 1);
  const changes = new Map(((doc.plan && doc.plan.changes) || []).map((c) => [c.kind + '/' + c.name, c]));
  const index = diagnosticIndex(doc);
  entries = rows.map((row) => {
    const parts = partsOf(doc, row, names, changes, index);
    const hold = holdOf(row, parts.target, parts.reconcileOff);
    return { key: row.key, row, parts, hold, search: searchText(row, parts, hold), signature: null };
  });
  const held = new Set(rows.map((row) => row.key));
  for (const key of openKeys) if (!held.has(key)) openKeys.delete(key);
  for (const key of heights.keys()) if (!held.has(key)) forgetHeight(key);
}

/** What a row shows: a drawn row whose signature is unchanged keeps its nodes (an open detail, the focus survive). */
function signatureOf(entry) {
  if (entry.signature === null) entry.signature = JSON.stringify([entry.row, entry.parts.change, entry.parts.log, entry.parts.diagnostics, entry.parts.target, entry.parts.reconcileOff]);
  return entry.signature;
}

function forgetHeight(key) {
  if (!heights.has(key)) return;
  heightSum -= heights.get(key);
  heights.delete(key);
}

function layOut() {
  offsets = new Array(shownEntries.length + 1);
  offsets[0] = 0;
  for (let i = 0; i < shownEntries.length; i++) {
    const h = heights.get(shownEntries[i].key);
    offsets[i + 1] = offsets[i] + (h === undefined ? estimate : h);
  }
}

/** The first entry whose bottom is below y (binary search over offsets). */
function entryAt(y) {
  let lo = 0;
  let hi = shownEntries.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (offsets[mid + 1] <= y) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function spacer(end) {
  const td = el('td');
  td.colSpan = 9;
  const tr = add(el('tr', 'spacer'), td);
  tr.setAttribute('aria-hidden', 'true');
  tr.dataset.end = end;
  return tr;
}

function setSpacer(tr, px) {
  tr.hidden = px <= 0;
  tr.firstElementChild.style.height = Math.max(0, Math.round(px)) + 'px';
}

/** The nodes of an entry: kept while its signature holds, else built again (its detail too when open). */
function nodesOf(entry) {
  const signature = signatureOf(entry);
  const known = drawnNodes.get(entry.key);
  if (known && known.signature === signature) return known;
  detailCount += 1;
  const detailId = 'detail-' + detailCount;
  const nodes = { signature, entry, detailId, tr: buildRow(entry.row, entry.parts, entry.hold, detailId), detail: null };
  if (openKeys.has(entry.key)) nodes.detail = buildDetail(entry.row, entry.parts, entry.hold, detailId);
  drawnNodes.set(entry.key, nodes);
  return nodes;
}

function removeNodes(nodes) {
  nodes.tr.remove();
  if (nodes.detail) nodes.detail.remove();
}

/** Puts the node at the cursor (moving it only when it is elsewhere); returns the next cursor. */
function place(body, node, cursor) {
  if (node === cursor) return cursor.nextElementSibling;
  body.insertBefore(node, cursor);
  return cursor;
}

/** Draws the entries in [first, last) between the spacers; returns whether a drawn row's height differed from the one used. */
function drawRange(body, first, last) {
  const top = body.querySelector(':scope > tr.spacer[data-end="top"]') || spacer('top');
  const bottom = body.querySelector(':scope > tr.spacer[data-end="bottom"]') || spacer('bottom');
  const keep = new Set();
  let cursor = place(body, top, body.firstElementChild);
  const drawn = [];
  for (let i = first; i < last; i++) {
    const entry = shownEntries[i];
    const known = drawnNodes.get(entry.key);
    const nodes = nodesOf(entry);
    if (known && known !== nodes) {
      // Rebuilt: the old nodes go, and the cursor steps past them first.
      if (cursor === known.tr) cursor = known.tr.nextElementSibling;
      if (known.detail && cursor === known.detail) cursor = known.detail.nextElementSibling;
      removeNodes(known);
    }
    keep.add(entry.key);
    nodes.tr.setAttribute('aria-rowindex', String(i + 2));
    cursor = place(body, nodes.tr, cursor);
    if (nodes.detail) {
      nodes.detail.hidden = !openKeys.has(entry.key);
      cursor = place(body, nodes.detail, cursor);
    }
    drawn.push(nodes);
  }
  place(body, bottom, cursor);
  for (const [key, nodes] of drawnNodes) {
    if (keep.has(key)) continue;
    removeNodes(nodes);
    drawnNodes.delete(key);
  }
  setSpacer(top, offsets[first]);
  setSpacer(bottom, offsets[shownEntries.length] - offsets[last]);
  let changed = false;
  for (const nodes of drawn) {
    const h = nodes.tr.getBoundingClientRect().height + (nodes.detail && !nodes.detail.hidden ? nodes.detail.getBoundingClientRect().height : 0);
    if (heights.get(nodes.entry.key) === h) continue;
    forgetHeight(nodes.entry.key);
    heights.set(nodes.entry.key, h);
    heightSum += h;
    changed = true;
  }
  if (heights.size > 0) estimate = heightSum / heights.size;
  return changed;
}

/** Draws the rows in and near the viewport; a row's height is measured when drawn, so the spacers settle in a few passes. */
function drawWindow() {
  drawQueued = false;
  const body = byId('rows');
  for (let pass = 0; pass < 3; pass++) {
    // From the viewport's top in the body (0 while the table starts below it): a screen and the overscan either side, so
    // the first screen of rows is there before the reader scrolls down to the table.
    const inBody = Math.max(0, -body.getBoundingClientRect().top);
    const first = entryAt(Math.max(0, inBody - OVERSCAN_PX));
    const last = Math.max(first, Math.min(shownEntries.length, entryAt(inBody + window.innerHeight + OVERSCAN_PX) + 1));
    if (!drawRange(body, first, last)) break;
    layOut();
    setSpacer(body.querySelector(':scope > tr.spacer[data-end="top"]'), offsets[first]);
    setSpacer(body.querySelector(':scope > tr.spacer[data-end="bottom"]'), offsets[shownEntries.length] - offsets[last]);
  }
  document.body.dataset.drawn = String(drawnNodes.size);
}

function queueDraw() {
  if (drawQueued) return;
  drawQueued = true;
  requestAnimationFrame(drawWindow);
}

/** Opens or closes a row's detail (built when first opened); its row is measured again when drawn. */
function toggle(key) {
  const nodes = drawnNodes.get(key);
  const open = !openKeys.has(key);
  if (open) openKeys.add(key);
  else openKeys.delete(key);
  if (nodes) {
    if (open && !nodes.detail) {
      nodes.detail = buildDetail(nodes.entry.row, nodes.entry.parts, nodes.entry.hold, nodes.detailId);
      nodes.tr.after(nodes.detail);
    }
    nodes.tr.querySelector('.expand').setAttribute('aria-expanded', String(open));
    if (nodes.detail) nodes.detail.hidden = !open;
  }
  drawWindow();
}

/** Shows the rows (and orphans) whose words hold every word typed in the filter box: a pass over the entries, then the window drawn. */
function applyFilter() {
  const words = byId('filter').value.toLowerCase().split(/\s+/).filter(Boolean);
  const matches = (search) => words.every((w) => search.includes(w));
  shownEntries = words.length === 0 ? entries : entries.filter((entry) => matches(entry.search));
  layOut();
  byId('resources').setAttribute('aria-rowcount', String(shownEntries.length + 1));
  drawWindow();
  for (const tr of byId('orphan-rows').children) tr.hidden = !matches(tr.dataset.search);
  byId('shown').textContent = words.length > 0 ? '(' + shownEntries.length + ' of ' + entries.length + ')' : '(' + entries.length + ')';
  const empty = byId('empty');
  empty.hidden = shownEntries.length > 0;
  empty.textContent = entries.length === 0 ? 'No resource yet: the daemon has not finished a reconcile.' : 'No resource matches the filter.';
}

window.addEventListener('scroll', queueDraw, { passive: true });
window.addEventListener('resize', queueDraw);
`;
