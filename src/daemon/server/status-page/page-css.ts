// The status page's stylesheet: system fonts only, light and dark by prefers-color-scheme; colour only adds to the words.

/** Served as /status-page/page.css. */
export const PAGE_CSS = `:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --panel: #f6f8fa; --accent: #2f7d5b;
  --ok-bg: #dafbe1; --ok-fg: #116329; --warn-bg: #fff8c5; --warn-fg: #7d4e00;
  --bad-bg: #ffebe9; --bad-fg: #a40e26; --info-bg: #ddf4ff; --info-fg: #0a3069; --off-bg: #eaeef2; --off-fg: #424a53;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117; --fg: #e6edf3; --muted: #8d96a0; --line: #30363d; --panel: #161b22; --accent: #3fb950;
    --ok-bg: #12361f; --ok-fg: #7ee2a0; --warn-bg: #3b2e05; --warn-fg: #e3b341;
    --bad-bg: #4a1419; --bad-fg: #ffa198; --info-bg: #0c2d4f; --info-fg: #9cd1ff; --off-bg: #262c34; --off-fg: #c2cad3;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
a { color: var(--accent); }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12.5px; }
.top { display: flex; align-items: baseline; justify-content: space-between; gap: 1rem; flex-wrap: wrap;
  padding: .6rem 1.2rem; border-bottom: 1px solid var(--line); background: var(--panel); }
h1 { font-size: 1.25rem; margin: 0; }
h2 { font-size: 1.05rem; margin: 1.2rem 0 .5rem; }
h3 { font-size: .8rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin: 0 0 .3rem; }
main { padding: 0 1.2rem 1rem; }
footer { padding: .8rem 1.2rem 1.2rem; font-size: .85rem; }
.muted { color: var(--muted); font-weight: normal; }
.live { margin: 0; font-size: .85rem; color: var(--muted); }
.live.lost { color: var(--bad-fg); font-weight: 600; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
.overview { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 1fr); gap: 1rem 2rem; margin-top: 1rem; }
@media (max-width: 900px) { .overview { grid-template-columns: minmax(0, 1fr); } }
.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .15rem 1rem; margin: 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; overflow-wrap: anywhere; }
.counts { display: flex; flex-wrap: wrap; gap: .8rem 2rem; align-content: start; }
.count-list { list-style: none; margin: 0; padding: 0; }
.count-list li { display: flex; justify-content: space-between; gap: 1rem; min-width: 9rem; padding: .05rem 0; }
.warnings { grid-column: 1 / -1; margin: 0; padding: 0; list-style: none; }
.warnings li { margin: .3rem 0; padding: .4rem .7rem; border-radius: 6px; background: var(--bad-bg); color: var(--bad-fg); }
.problems { margin: 0; padding-left: 1.2rem; }
.problems li { margin: .2rem 0; }
/* A warning per file at 10,000 files: the browser lays out only the lines near the viewport (docs/status-page.md). */
.problems > li { content-visibility: auto; contain-intrinsic-size: auto 2.6em; }
.table-head { display: flex; align-items: baseline; justify-content: space-between; gap: 1rem; flex-wrap: wrap; }
.filter { display: flex; align-items: center; gap: .5rem; color: var(--muted); }
.filter input { width: min(28rem, 70vw); padding: .35rem .5rem; font: inherit; color: var(--fg); background: var(--bg);
  border: 1px solid var(--line); border-radius: 6px; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .35rem .5rem; border-bottom: 1px solid var(--line); }
thead th { position: sticky; top: 0; background: var(--panel); font-size: .8rem; color: var(--muted); white-space: nowrap; }
/* Paths, names and job ids wrap at the <wbr> after their separators (breakable() in script-overview.ts); break-word only
   for a segment wider than the whole column, and it leaves the column's min-content alone, so a table never splits a word. */
td.file code, .history-events code { overflow-wrap: break-word; }
.history-events td:first-child { white-space: nowrap; }
.reason.off { color: var(--warn-fg); }
tbody tr.row:hover { background: var(--panel); }
tr.spacer > td { padding: 0; border: 0; }
tr.detail > td { background: var(--panel); padding: .6rem 1rem 1rem 2rem; }
.expand { overflow-wrap: break-word; font: inherit; font-weight: 600; color: var(--fg); background: none; border: 0; padding: 0; cursor: pointer; text-align: left; }
.expand::before { content: "▸ "; color: var(--muted); }
.expand[aria-expanded="true"]::before { content: "▾ "; }
:focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 999px; font-size: .8rem; font-weight: 600; white-space: nowrap;
  background: var(--off-bg); color: var(--off-fg); }
.badge.ok { background: var(--ok-bg); color: var(--ok-fg); }
.badge.warn { background: var(--warn-bg); color: var(--warn-fg); }
.badge.bad { background: var(--bad-bg); color: var(--bad-fg); }
.badge.info { background: var(--info-bg); color: var(--info-fg); }
.reason { display: block; font-size: .8rem; color: var(--muted); }
.cmd { display: block; margin-top: .2rem; user-select: all; min-width: 14rem; overflow-wrap: normal; word-break: normal; font-size: .8rem; }
/* A command's words each stay whole: it wraps at its spaces only. */
.cmd .word { white-space: nowrap; }
code.path { display: block; overflow-wrap: break-word; }
.detail h4 { margin: .7rem 0 .25rem; font-size: .85rem; }
.detail h4:first-child { margin-top: 0; }
.detail p { margin: .2rem 0; overflow-wrap: anywhere; }
.changes { border-collapse: collapse; width: auto; }
.changes td, .changes th { border-bottom: 1px solid var(--line); padding: .15rem .6rem .15rem 0; }
.changes .arrow { color: var(--muted); }
pre.log { margin: .2rem 0; padding: .5rem .7rem; max-height: 22rem; overflow: auto; white-space: pre-wrap;
  overflow-wrap: anywhere; background: var(--bg); border: 1px solid var(--line); border-radius: 6px; }
.diag { margin: .15rem 0; }
`;
