// Plan renderers: text (terminal), markdown (pull-request comment), json (design.md §4). They read the plan object only.
export { renderText } from './text.js';
export type { TextOptions } from './text.js';
export { renderMarkdown, escapeMarkdown } from './markdown.js';
export { renderJson } from './json.js';
export { summarySentence } from './format.js';
