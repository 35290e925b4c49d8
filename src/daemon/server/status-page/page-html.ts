// The status page's HTML (served at `/`): the frame the script fills from /status; no text from /status is in it.

/** The document served at `/`: header, filter box, manifest problems, the resource table and the orphans. */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>converge status</title>
<link rel="icon" href="/status-page/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/status-page/page.css">
<script src="/status-page/page.js" defer></script>
</head>
<body>
<header class="top">
  <h1>converge <span id="version" class="muted"></span></h1>
  <p id="live" class="live" role="status" aria-live="polite">loading /status…</p>
</header>
<main>
  <section aria-labelledby="overview-title" class="overview">
    <h2 id="overview-title" class="visually-hidden">Overview</h2>
    <dl id="facts" class="facts"></dl>
    <div class="counts">
      <div><h3>Sync</h3><ul id="sync-counts" class="count-list"></ul></div>
      <div><h3>Health</h3><ul id="health-counts" class="count-list"></ul></div>
      <div id="deletes" hidden><h3>Deletes</h3><ul id="delete-counts" class="count-list"></ul></div>
    </div>
    <ul id="warnings" class="warnings"></ul>
  </section>

  <section id="problems" aria-labelledby="problems-title" hidden>
    <h2 id="problems-title">Manifest problems</h2>
    <ul id="problem-list" class="problems"></ul>
  </section>

  <section aria-labelledby="resources-title">
    <div class="table-head">
      <h2 id="resources-title">Resources <span id="shown" class="muted"></span></h2>
      <label class="filter">Filter
        <input id="filter" type="search" placeholder="name, kind, file or status word  ( / )" autocomplete="off" spellcheck="false">
      </label>
    </div>
    <div class="table-wrap">
      <table id="resources">
        <thead>
          <tr>
            <th scope="col">Kind</th>
            <th scope="col">Name</th>
            <th scope="col">File</th>
            <th scope="col">Sync</th>
            <th scope="col">Health</th>
            <th scope="col">Revision</th>
            <th scope="col">Last job</th>
            <th scope="col">Hold or conflict</th>
            <th scope="col">Drifted fields</th>
          </tr>
        </thead>
        <tbody id="rows"></tbody>
      </table>
    </div>
    <p id="empty" class="muted" hidden></p>
  </section>

  <section id="orphans" aria-labelledby="orphans-title" hidden>
    <h2 id="orphans-title">Orphans <span class="muted">(live, declared by no manifest; converge does not write them)</span></h2>
    <table>
      <thead><tr><th scope="col">Kind</th><th scope="col">Name</th><th scope="col">Plan</th></tr></thead>
      <tbody id="orphan-rows"></tbody>
    </table>
  </section>
</main>
<footer class="muted">Read-only view of <a href="/status">/status</a>, followed live. Also: <a href="/metrics">/metrics</a>, <a href="/readyz">/readyz</a>.</footer>
</body>
</html>
`;

/** The tab's icon: a ring in the page's accent colour. */
export const PAGE_ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="6" fill="none" stroke="#2f7d5b" stroke-width="3"/></svg>
`;
