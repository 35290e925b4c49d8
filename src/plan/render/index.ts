// Plan renderers: text (terminal), markdown (pull-request comment), json (docs/contracts.md §3). They read the plan object only.
export { renderText } from './text.js';
export { renderMarkdown } from './markdown.js';
export { renderJson } from './json.js';
