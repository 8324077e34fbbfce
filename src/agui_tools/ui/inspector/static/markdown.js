// A small, safe Markdown renderer for assistant text.
//
// It builds DOM nodes with el() and text nodes only: markup in the text is never
// parsed as HTML — "<b>" stays those three characters. Links are live only for
// http: and https: (opened with rel="noopener noreferrer"); any other scheme
// (javascript:, data:, file:, a relative path) is shown as inert text. Images are
// never loaded: their alt text and address are shown instead.
//
// Supported: paragraphs, # headings, fenced ``` code, indented code is not special,
// > quotes, - * + and 1. lists, --- rules, `code`, **strong**, *em* / _em_, [text](url),
// <http://autolinks>.

import { el } from "./core.js";

const SAFE_SCHEMES = new Set(["http:", "https:"]);

export function safeHref(href) {
  try {
    const url = new URL(href);
    return SAFE_SCHEMES.has(url.protocol) ? url.href : null;
  } catch (err) {
    return null; // relative or malformed: there is no base it could safely resolve against
  }
}

function link(label, href) {
  const safe = safeHref(href);
  if (safe === null) {
    return el("span", { class: "inert-link", title: `link not followed: ${href}`, text: `${label} (${href})` });
  }
  return el("a", { href: safe, rel: "noopener noreferrer", target: "_blank", referrerpolicy: "no-referrer", text: label });
}

// Inline spans, left to right; whatever is not markup is a text node.
const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|!\[([^\]]*)\]\(([^)\s]*)\)|\[([^\]]+)\]\(([^)\s]+)\)|<(https?:\/\/[^>\s]+)>|\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__|\*(?=[^\s*])([\s\S]*?[^\s*])\*|(?<![\p{L}\p{N}_])_(?=[^\s_])([\s\S]*?[^\s_])_(?![\p{L}\p{N}_])/gu;

export function inline(text, depth = 0) {
  const out = [];
  let last = 0;
  INLINE.lastIndex = 0;
  if (depth > 4) return [document.createTextNode(text)];
  const re = new RegExp(INLINE.source, "gu"); // nested calls must not share lastIndex
  let m;
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) out.push(document.createTextNode(text.slice(last, m.index)));
    if (m[1] !== undefined) out.push(el("code", { text: m[2] }));
    else if (m[4] !== undefined) out.push(el("span", { class: "inert-link", title: "images are not loaded", text: `image: ${m[3] || "(no description)"} (${m[4]})` }));
    else if (m[5] !== undefined) out.push(link(m[5], m[6]));
    else if (m[7] !== undefined) out.push(link(m[7], m[7]));
    else if (m[8] !== undefined || m[9] !== undefined) out.push(el("strong", {}, ...inline(m[8] ?? m[9], depth + 1)));
    else out.push(el("em", {}, ...inline(m[10] ?? m[11], depth + 1)));
    last = re.lastIndex;
  }
  if (last < text.length) out.push(document.createTextNode(text.slice(last)));
  return out;
}

function paragraph(lines) {
  const p = el("p");
  lines.forEach((line, i) => {
    if (i) p.append(el("br"));
    p.append(...inline(line));
  });
  return p;
}

const FENCE = /^\s{0,3}(```+|~~~+)\s*([^`\s]*)/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const BULLET = /^\s{0,3}([-*+])\s+(.*)$/;
const ORDERED = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;

/** The blocks of ``text`` as a DocumentFragment. */
export function renderMarkdown(text, depth = 0) {
  const frag = document.createDocumentFragment();
  const lines = text.split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (line.trim() === "") {
      i++;
    } else if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence)) body.push(lines[i++]);
      i++; // the closing fence (or the end of the text)
      frag.append(el("pre", { class: "md-code", "data-lang": m[2] || null }, el("code", { text: body.join("\n") })));
    } else if ((m = HEADING.exec(line))) {
      frag.append(el(`h${Math.min(6, m[1].length + 2)}`, { class: "md-h" }, ...inline(m[2])));
      i++;
    } else if (RULE.test(line)) {
      frag.append(el("hr"));
      i++;
    } else if (QUOTE.test(line) && depth < 4) {
      const body = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) {
        body.push(m[1]);
        i++;
      }
      frag.append(el("blockquote", {}, renderMarkdown(body.join("\n"), depth + 1)));
    } else if (BULLET.test(line) || ORDERED.test(line)) {
      const ordered = !BULLET.test(line);
      const re = ordered ? ORDERED : BULLET;
      const first = re.exec(line);
      const list = el(ordered ? "ol" : "ul", { start: ordered && first[1] !== "1" ? first[1] : null });
      while (i < lines.length && (m = re.exec(lines[i]))) {
        const item = [m[2]];
        i++;
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !re.test(lines[i])) item.push(lines[i++].trim());
        list.append(el("li", {}, ...inline(item.join(" "))));
      }
      frag.append(list);
    } else {
      const body = [];
      while (i < lines.length && lines[i].trim() !== "" && !FENCE.test(lines[i]) && !HEADING.test(lines[i]) &&
        !(body.length && (BULLET.test(lines[i]) || QUOTE.test(lines[i])))) body.push(lines[i++]);
      frag.append(paragraph(body));
    }
  }
  return frag;
}

/** Where the text can be cut so that what comes before is final: after the last blank
 * line outside a code fence (the blocks before it can no longer change). */
export function stableEnd(text, from) {
  let cut = from;
  let open = false;
  let lineStart = from;
  let blank = false;
  for (let i = from; i <= text.length; i++) {
    if (i === text.length || text.charCodeAt(i) === 10) {
      if (i === text.length) break; // the last line is still open
      const line = text.slice(lineStart, i);
      if (FENCE.test(line)) open = !open;
      const isBlank = line.trim() === "";
      if (isBlank && !open && !blank) cut = i + 1;
      blank = isBlank;
      lineStart = i + 1;
    }
  }
  return cut;
}
