// The status page's script, part four (browser JavaScript as text): a resource's history in its detail, read from GET /history/KIND/NAME (the same entries as `converge history`).

/** Browser JavaScript; joined with the other parts into one IIFE by page-script.ts. */
export const SCRIPT_HISTORY = String.raw`
/** The newest entries of the resource's history, fetched when its detail is built (opened, or its row changed while open). */
function historySection(row) {
  const section = el('section', 'history');
  section.dataset.key = row.key;
  const status = el('p', 'muted', 'reading the history…');
  add(section, add(el('h4'), 'History ', el('span', 'muted', '(newest first; converge history ' + row.key + ' shows all)')), status);
  const path = '/history/' + encodeURIComponent(row.kind) + '/' + encodeURIComponent(row.name);
  const answer = fetch(path, { cache: 'no-store' });
  answer
    .then((res) => (res.ok ? res.json() : res.json().then((body) => Promise.reject(new Error(body.error || 'HTTP ' + res.status)))))
    .then((doc) => {
      if (doc.events.length === 0) {
        status.textContent = 'no events recorded';
        return;
      }
      status.remove();
      section.append(historyTable(doc.events));
    })
    .catch((error) => {
      status.textContent = 'history unavailable: ' + error.message;
    });
  return section;
}

/** The revision of an entry: its id and status; the service's times of it on hover. */
function historyRevisionCell(revision) {
  const td = el('td', null, revision ? revision.id + ' ' + revision.status : '');
  if (revision && (revision.createdAt || revision.updatedAt)) {
    const created = revision.createdAt ? 'created ' + revision.createdAt : '';
    const since = revision.updatedAt ? revision.status + ' since ' + revision.updatedAt : '';
    td.title = [created, since].filter(Boolean).join(', ');
  }
  return td;
}

function historyTable(events) {
  const head = add(el('thead'), add(el('tr'), ...['When', 'Type', 'Reason', 'Message', 'Job', 'Revision', 'Recorded by'].map((h) => el('th', null, h))));
  for (const th of head.querySelectorAll('th')) th.scope = 'col';
  const body = el('tbody');
  for (const event of events) {
    const tr = add(el('tr'), add(el('td'), when(event.at)), el('td', null, event.type), el('td', null, event.reason), el('td', null, event.message),
      add(el('td'), event.job ? breakable('code', null, event.job.id) : null),
      historyRevisionCell(event.revision), el('td', 'muted', event.by));
    tr.dataset.type = event.type;
    if (event.job) tr.dataset.job = event.job.id;
    body.append(tr);
  }
  return add(el('div', 'table-wrap'), add(el('table', 'changes history-events'), head, body));
}
`;
