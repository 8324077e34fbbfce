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

export function link(label, href) {
  const safe = safeHref(href);
  if (safe === null) {
    return el("span", { class: "inert-link", title: `link not followed: ${href}`, text: `${label} (${href})` });
  }
  return el("a", { href: safe, rel: "noopener noreferrer", target: "_blank", referrerpolicy: "no-referrer", text: label });
}

// Inline spans, left to right; whatever is not markup is a text node. A scanner, not one
// big regex: a regex with lazy `[\s\S]*?` alternatives rescans to the end of the text
// from every opener that has no closer — quadratic (100 KB of "[a](" froze the tab for
// seconds). Here each closer is found in O(1) from tables built once per text (the next
// "]", the next ")"-or-space, the next ">"-or-space), and a delimiter whose closer is not
// found once is not looked for again (from further on it cannot be found either): linear
// in the text, times the nesting depth (at most 5).
//
// Spans, tried in this order at each position (the leftmost span wins): `code` (a run
// of n backticks up to the next run of exactly n), ![image](address), [text](url),
// <http://autolink>, **strong**, __strong__, *em*, _em_ (not inside a word).
//
// A block has at most MAX_SPANS spans (nested ones included, shared by a paragraph's
// lines): past them the rest of the block is plain text. The scan is linear already;
// the bound is for the DOM — 66,000 "**a" would otherwise be 33,000 <strong> elements,
// a long task of layout however quickly they are found.

export const MAX_SPANS = 1000;

const SPACE = /\s/;
const WORD = /[\p{L}\p{N}_]/u;

function nextTable(text, stops) {
  const n = text.length;
  const next = new Int32Array(n + 1);
  next[n] = n;
  for (let k = n - 1; k >= 0; k--) next[k] = stops(text[k]) ? k : next[k + 1];
  return next;
}

export function inline(text, depth = 0, budget = { spans: MAX_SPANS }) {
  if (depth > 4) return [document.createTextNode(text)];
  const n = text.length;
  const out = [];
  const failed = new Set(); // delimiters with no closer from where they were last looked for
  let tables = null;
  const table = () => tables || (tables = {
    bracket: nextTable(text, (c) => c === "]"),
    url: nextTable(text, (c) => c === ")" || SPACE.test(c)),
    auto: nextTable(text, (c) => c === ">" || SPACE.test(c)),
  });
  let last = 0;
  const emit = (from, node, to) => {
    budget.spans--;
    if (from > last) out.push(document.createTextNode(text.slice(last, from)));
    out.push(node);
    last = to;
  };
  // the first closer ``delim`` at j >= from with ok(j); -1 (and remembered) when none
  const closer = (key, delim, from, ok) => {
    if (failed.has(key)) return -1;
    for (let j = text.indexOf(delim, from); j >= 0; j = text.indexOf(delim, j + 1)) if (ok(j)) return j;
    failed.add(key);
    return -1;
  };
  const notSpace = (c) => c !== undefined && !SPACE.test(c);
  let i = 0;
  while (i < n && budget.spans > 0) {
    const c = text[i];
    if (c === "`") {
      let r = i;
      while (r < n && text[r] === "`") r++;
      const run = r - i;
      const fence = "`".repeat(run);
      const j = closer(`code${run}`, fence, r + 1, (j) => text[j - 1] !== "`" && text[j + run] !== "`");
      if (j >= 0) {
        emit(i, el("code", { text: text.slice(r, j) }), j + run);
        i = j + run;
      } else i = r; // the run is literal text
      continue;
    }
    if ((c === "[" || (c === "!" && text[i + 1] === "[")) && !failed.has("]")) {
      const image = c === "!";
      const open = image ? i + 1 : i;
      const t = table();
      const close = t.bracket[open + 1];
      if (close >= n) failed.add("]");
      else if (text[close + 1] === "(" && (image || close > open + 1)) {
        const stop = t.url[close + 2];
        if (stop < n && text[stop] === ")" && (image || stop > close + 2)) {
          const label = text.slice(open + 1, close);
          const href = text.slice(close + 2, stop);
          const node = image
            ? el("span", { class: "inert-link", title: "images are not loaded", text: `image: ${label || "(no description)"} (${href})` })
            : link(label, href);
          emit(i, node, stop + 1);
          i = stop + 1;
          continue;
        }
      }
    } else if (c === "<" && (text.startsWith("http://", i + 1) || text.startsWith("https://", i + 1))) {
      const begin = i + (text[i + 5] === "s" ? 9 : 8);
      const stop = table().auto[begin];
      if (stop < n && text[stop] === ">" && stop > begin) {
        const href = text.slice(i + 1, stop);
        emit(i, link(href, href), stop + 1);
        i = stop + 1;
        continue;
      }
    } else if ((c === "*" || c === "_") && text[i + 1] === c && notSpace(text[i + 2])) {
      const delim = c + c;
      const j = closer(delim, delim, i + 3, (j) => notSpace(text[j - 1]));
      if (j >= 0) {
        emit(i, el("strong", {}, ...inline(text.slice(i + 2, j), depth + 1, budget)), j + 2);
        i = j + 2;
        continue;
      }
    }
    if (c === "*" && notSpace(text[i + 1]) && text[i + 1] !== "*") {
      const j = closer("*", "*", i + 2, (j) => notSpace(text[j - 1]) && text[j - 1] !== "*");
      if (j >= 0) {
        emit(i, el("em", {}, ...inline(text.slice(i + 1, j), depth + 1, budget)), j + 1);
        i = j + 1;
        continue;
      }
    } else if (c === "_" && notSpace(text[i + 1]) && text[i + 1] !== "_" && !(i > 0 && WORD.test(text[i - 1]))) {
      const j = closer("_", "_", i + 2, (j) => notSpace(text[j - 1]) && text[j - 1] !== "_" && !(j + 1 < n && WORD.test(text[j + 1])));
      if (j >= 0) {
        emit(i, el("em", {}, ...inline(text.slice(i + 1, j), depth + 1, budget)), j + 1);
        i = j + 1;
        continue;
      }
    }
    i++;
  }
  if (last < n) out.push(document.createTextNode(text.slice(last)));
  return out;
}

function paragraph(lines) {
  const p = el("p");
  const budget = { spans: MAX_SPANS };
  lines.forEach((line, i) => {
    if (i) p.append(el("br"));
    p.append(...inline(line, 0, budget));
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
