"use strict";
// Draws the dedup report from the JSON block on this page, and the texts from the parts in the
// folder beside it (index_data/), each loaded by a script element when a view first needs it.
// Text from the data is only ever placed with textContent, never parsed as markup.
(function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const app = document.getElementById("app");
  // Parts: clusters (members, palettes, pairs) by cluster id, documents' texts by number.
  const full = {}, texts = {}, requested = {}, failed = [];
  let waiting = 0;
  // A part that comes draws the page again: at once when it is the last one asked for, and
  // else at most every quarter second (a search of the text asks for every part, and each
  // draw filters every cluster: drawing after each part took most of a search's time).
  let drawnAt = 0;
  const DRAWS_APART_MS = 250;
  window.dedupPart = (kind, number, items) => {
    if (kind === "clusters") for (const cluster of items) full[cluster.id] = cluster;
    else for (const [at, text] of items) texts[at] = text;
    waiting -= 1;
    if (waiting === 0 || performance.now() - drawnAt > DRAWS_APART_MS) redraw();
  };
  function request(kind, number) {
    const name = `${kind}-${String(number).padStart(4, "0")}.js`;
    if (requested[name]) return;
    requested[name] = true;
    waiting += 1;
    const script = document.createElement("script");
    script.src = `${data.parts_folder}/${name}`;
    script.onerror = () => { failed.push(`${data.parts_folder}/${name}`); waiting -= 1; redraw(); };
    document.head.append(script);
  }
  const clusterOf = (row) => full[row.id] || (request("clusters", row.part), null);
  const textOf = (number) => texts[number] ?? (request("documents", data.documents[number].part), null);
  function loading() {
    if (failed.length) return el("p", {class: "notice", id: "part-missing"},
      `${failed[0]} could not be read: keep the folder ${data.parts_folder} beside index.html (copy or move both).`);
    return el("p", {class: "muted loading"}, "loading…");
  }
  const PAGE = 100, PAIRS = 50;
  const COLOURS = ["#ffe066", "#a5d8ff", "#b2f2bb", "#ffc9c9", "#d0bfff", "#ffd8a8",
    "#99e9f2", "#eebefa", "#c0eb75", "#fcc2d7", "#e9ecef", "#ffec99"];
  const state = {query: "", source: "", minSize: 2, minSim: 0, sort: "size", desc: true, page: 0, open: null,
    pair: "", match: null, matchPage: 0};

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key === "style") node.style.cssText = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const fmt = (n) => Number(n).toLocaleString("en-US");
  const pct = (a, b) => (b ? Math.round((100 * a) / b) + "%" : "-");

  // Columns listed in `text` (by index) hold text and are aligned left; the rest are numbers.
  function table(headers, rows, text = [0]) {
    const cls = (i) => (text.includes(i) ? "left" : "");
    const head = el("tr", {}, ...headers.map((h, i) => el("th", {class: cls(i)}, h)));
    return el("table", {}, head, ...rows.map((r) => el("tr", {}, ...r.map((c, i) => el("td", {class: cls(i)}, c)))));
  }

  function overview() {
    const s = data.summary;
    const section = el("section", {id: "overview"});
    section.append(
      el("h1", {}, "dedup report"),
      el("p", {}, `${fmt(s.files)} files, ${fmt(s.documents)} documents (chapters and records): ${fmt(s.matched_documents)} share text ` +
        `(${fmt(s.document_matches)} matches, ${fmt(s.document_groups)} groups of copies). ` +
        `${fmt(s.passages)} passages, ${fmt(s.clusters)} clusters of near-duplicate passages ` +
        `(${fmt(s.duplicated_passages)} passages, ${fmt(s.verified_pairs)} verified pairs). dedup ${data.version}, ` +
        `threshold ${data.options.threshold}, ${data.options.ngram}-character shingles, script ${data.options.script}.`));
    const sources = table(["source", "files", "passages", "in clusters", "share", "duplicated characters"],
      data.sources.map((x) => [x.name, fmt(x.files), fmt(x.passages), fmt(x.duplicated), pct(x.duplicated, x.passages), fmt(x.duplicated_chars)]));
    const names = data.sources.map((x) => x.name);
    const shared = {};
    for (const [a, b, n] of data.overlap) { shared[a + "\u0000" + b] = n; shared[b + "\u0000" + a] = n; }
    const matrix = table(["", ...names], names.map((a) => [a, ...names.map((b) => fmt(shared[a + "\u0000" + b] || 0))]));
    matrix.id = "matrix";
    const peak = Math.max(1, ...data.histogram);
    const bins = data.histogram.map((n, i) => [`${(i / data.histogram.length).toFixed(2)}–${((i + 1) / data.histogram.length).toFixed(2)}`,
      el("span", {}, el("span", {class: "bar", style: `width:${Math.round((160 * n) / peak)}px`}), " " + fmt(n))]);
    const grid = el("div", {class: "grid"},
      el("div", {}, el("h2", {}, "Sources"), sources),
      el("div", {}, el("h2", {}, "Clusters shared between sources"), matrix),
      el("div", {}, el("h2", {}, "Pair similarity (Jaccard)"), table(["range", "pairs"], bins.filter((b, i) => data.histogram[i] || i === bins.length - 1))));
    section.append(grid);
    if (data.skipped.length) {
      section.append(el("h2", {}, `Skipped inputs (${data.skipped.length})`),
        table(["path", "reason"], data.skipped.map((x) => [x.path, x.reason]), [0, 1]));
    }
    return section;
  }

  // Text is searched as a scan compares it: one script, full-width and case folded, without
  // punctuation or spaces (data.fold is normalization's own character mapping), so that a
  // query in either script, with or without punctuation, finds the same clusters.
  const UNCOUNTED = /[\p{P}\p{S}\p{Z}\p{C}]/gu;
  function fold(text) {
    let out = "";
    for (const char of text.normalize("NFKC").toLowerCase().replace(UNCOUNTED, "")) out += data.fold[char] || char;
    return out;
  }
  const folded = new WeakMap();
  function foldedText(member) {
    if (!folded.has(member)) folded.set(member, fold(member.text) + "\u0000" + fold(member.title || ""));
    return folded.get(member);
  }

  // A search of the text loads every part of clusters; until one has come, its clusters are
  // left out of the list, which says so.
  function matches(row) {
    if (row.size < state.minSize || row.best < state.minSim) return false;
    if (state.source && !row.sources.includes(state.source)) return false;
    if (!state.query) return true;
    const q = state.query.toLowerCase();
    if (row.id.toLowerCase() === q) return true;
    const cluster = clusterOf(row);
    if (!cluster) return false;
    const f = fold(state.query);
    return cluster.members.some((m) =>
      (m.title || "").toLowerCase().includes(q) || m.path.toLowerCase().includes(q) ||
      m.source.toLowerCase().includes(q) || (f !== "" && foldedText(m).includes(f)));
  }

  function sorted(list) {
    const key = {size: (c) => c.size, similarity: (c) => c.best, id: (c) => Number(c.id.slice(1))}[state.sort];
    return list.slice().sort((a, b) => (state.desc ? key(b) - key(a) : key(a) - key(b)) || Number(a.id.slice(1)) - Number(b.id.slice(1)));
  }

  // A text with its marks ([start, end, colour, title], by start), in blocks of some BLOCK
  // characters cut after a line break: the browser lays out only the blocks in sight
  // (content-visibility), so a view of two whole books opens as fast as one of two passages.
  const BLOCK = 2000;
  function painted(text, marks) {
    const node = el("div", {class: "text"});
    let block = null, held = 0;
    const put = (from, to, mark) => {
      while (from < to) {
        if (!block) { block = el("div", {class: "block"}); node.append(block); held = 0; }
        let cut = to;
        if (held + (to - from) > BLOCK) {
          const line = text.indexOf("\n", from + Math.max(0, BLOCK - held));
          if (line >= 0 && line + 1 < to) cut = line + 1;
        }
        const piece = text.slice(from, cut);
        block.append(mark ? el("mark", {style: `background:${COLOURS[mark[2] % COLOURS.length]}`, ...(mark[3] ? {title: mark[3]} : {})}, piece) : piece);
        held += cut - from;
        if (cut < to) block = null;
        from = cut;
      }
    };
    let at = 0;
    for (const mark of marks) {
      const [start, end] = mark;
      if (start < at) continue;
      put(at, start, null);
      put(start, end, mark);
      at = end;
    }
    put(at, text.length, null);
    return node;
  }

  function memberView(member, cluster) {
    const text = painted(member.text, member.spans.map(([start, end, colour]) => [start, end, colour, null]));
    const where = member.record === null ? member.path : `${member.path} #${member.record}`;
    const head = el("div", {class: "head"},
      el("b", {}, member.source), ` · ${where} · `, el("b", {}, member.title || "(no chapter)"),
      ` · characters ${member.start}–${member.end}`,
      el("br"), member.representative ? "representative · " : "",
      member.through_others ? "linked only through other members · " : "",
      member.representative ? `${fmt(member.identical)} characters shared with other members`
        : `${fmt(member.identical)} identical characters with the representative`);
    return el("div", {class: "member" + (member.representative ? " rep" : ""), "data-member": member.id}, head, text);
  }

  function clusterView(cluster) {
    // Each side by where it is, so that two pairs from the same two chapters differ.
    const names = cluster.members.map((m) => `${m.source}: ${m.title || m.path} (${m.start}–${m.end})`);
    // A giant cluster's pairs are thousands of rows: the first PAIRS, and the rest on asking.
    const pairTable = (count) => table(["pair", "Jaccard", "containment", "identical characters"],
      cluster.pairs.slice(0, count).map(([a, b, j, c, n]) => [`${names[a]} ↔ ${names[b]}`, j.toFixed(3), c.toFixed(3), fmt(n)]));
    const pairs = el("div", {}, pairTable(PAIRS));
    if (cluster.pairs.length > PAIRS) {
      pairs.append(el("button", {id: "all-pairs", onclick: (e) => { e.stopPropagation(); pairs.replaceChildren(pairTable(cluster.pairs.length)); }},
        `show all ${fmt(cluster.pairs.length)} pairs`));
    }
    return el("div", {class: "view", id: "view"},
      el("h2", {}, `${cluster.id}: ${cluster.members.length} passages from ${cluster.sources.join(", ")}`),
      pairs, el("p", {class: "muted"}, "Same colour = same shared text, aligned across members (from the representative's point of view)."),
      el("div", {class: "members"}, ...cluster.members.map((m) => memberView(m, cluster))));
  }

  // Documents: which sources' documents share text (a cell opens the matches between two
  // sources), the matches, and one match side by side with its aligned spans.
  function documentSection() {
    const section = el("section", {id: "documents"}, el("h2", {}, "Documents that share text"));
    if (!data.matches_total) {
      section.append(el("p", {class: "muted"}, "No two documents share a stretch of text."));
      return section;
    }
    const names = [...new Set(data.match_overlap.flatMap(([a, b]) => [a, b]))].sort();
    const count = {};
    for (const [a, b, n] of data.match_overlap) { count[a + "\u0000" + b] = n; count[b + "\u0000" + a] = n; }
    const cell = (a, b) => {
      const n = count[a + "\u0000" + b] || 0;
      if (!n) return "0";
      const key = [a, b].sort().join("~");
      return el("a", {href: "#", class: "cell" + (state.pair === key ? " open" : ""), "data-pair": key,
        onclick: (e) => { e.preventDefault(); state.pair = state.pair === key ? "" : key; state.match = null; state.matchPage = 0; draw(); }}, fmt(n));
    };
    const matrix = table(["", ...names], names.map((a) => [a, ...names.map((b) => cell(a, b))]));
    matrix.id = "match-matrix";
    const copies = {};
    for (const [a, b, n] of data.copy_overlap) { copies[a + "\u0000" + b] = n; copies[b + "\u0000" + a] = n; }
    const copyMatrix = table(["", ...names], names.map((a) => [a, ...names.map((b) => fmt(copies[a + "\u0000" + b] || 0))]));
    copyMatrix.id = "copy-matrix";
    section.append(el("div", {class: "grid"},
      el("div", {}, el("p", {class: "muted"}, "Matches between the documents of two sources (a source with itself: between its own documents); click a number to list them. Each copy is matched with the document its group of copies keeps, not with every other copy, and two groups that share text once, by the documents they keep."), matrix),
      el("div", {}, el("p", {class: "muted"}, "Pairs of copies between two sources: two documents in one group of copies, matched with each other or through the one the group keeps."), copyMatrix)));
    const docs = data.documents;
    const label = (d) => `${d.source}: ${d.title || d.path}${d.record === null ? "" : " #" + d.record}`;
    let shown = data.matches;
    if (state.pair) {
      const [one, two] = state.pair.split("~");
      shown = shown.filter((m) => { const pair = [docs[m[1]].source, docs[m[2]].source].sort(); return pair[0] === one && pair[1] === two; });
    }
    if (state.match) {
      const at = shown.findIndex((m) => m[0] === state.match);
      if (at >= 0) state.matchPage = Math.floor(at / PAGE);
      else section.append(el("p", {class: "notice", id: "match-not-shown"}, data.matches.some((m) => m[0] === state.match)
        ? `Match ${state.match} is not between the sources chosen above; click the open cell to see all.`
        : `Match ${state.match} is not on this page (it holds the matches with the largest shares only; report.json has all ${fmt(data.matches_total)}).`));
    }
    const rows = el("table", {id: "matches"}, el("tr", {}, el("th", {class: "left"}, "match"), el("th", {class: "left"}, "document a"),
      el("th", {class: "left"}, "document b"), el("th", {}, "share of a"), el("th", {}, "share of b"), el("th", {}, "identical characters"), el("th", {}, "spans")));
    for (const m of shown.slice(state.matchPage * PAGE, (state.matchPage + 1) * PAGE)) {
      const [id, a, b, ca, cb, identical, spans] = m;
      rows.append(el("tr", {class: "row" + (state.match === id ? " open" : ""), "data-match": id,
        onclick: () => { state.match = state.match === id ? null : id; draw(); }},
        el("td", {class: "left"}, id), el("td", {class: "left"}, label(docs[a])), el("td", {class: "left"}, label(docs[b])),
        el("td", {}, pct(ca, 1)), el("td", {}, pct(cb, 1)), el("td", {}, fmt(identical)), el("td", {}, spans.length)));
      if (state.match === id) rows.append(el("tr", {}, el("td", {colspan: "7", class: "left"}, matchView(m))));
    }
    section.append(el("p", {class: "muted", id: "matches-count"}, `${fmt(shown.length)} of ${fmt(data.matches_total)} matches shown` +
      (data.matches.length < data.matches_total ? " (this page holds those with the largest shares; report.json holds all)" : "")), rows);
    const pages = Math.ceil(shown.length / PAGE);
    if (pages > 1) {
      section.append(el("div", {class: "pager"}, `page ${state.matchPage + 1} of ${pages}`,
        el("button", {onclick: () => { state.match = null; state.matchPage = Math.max(0, state.matchPage - 1); draw(); }}, "previous"),
        el("button", {onclick: () => { state.match = null; state.matchPage = Math.min(pages - 1, state.matchPage + 1); draw(); }}, "next")));
    }
    return section;
  }

  function matchView(m) {
    const [id, a, b, ca, cb, identical, spans] = m;
    const side = (d, share, which) => {
      const text = textOf(which ? b : a);
      const where = d.record === null ? d.path : `${d.path} #${d.record}`;
      const title = (n) => `span ${n + 1}: ${fmt(spans[n][4])} identical characters`;
      const marks = spans.map((s, n) => which ? [s[2], s[3], n, title(n)] : [s[0], s[1], n, title(n)])
        .sort((x, y) => x[0] - y[0]);
      return el("div", {class: "member", "data-document": d.id},
        el("div", {class: "head"}, el("b", {}, d.source), ` · ${where} · `, el("b", {}, d.title || "(no chapter)"),
          ` · characters ${d.start}–${d.end}`, el("br"), `${pct(share, 1)} of its story characters shared`),
        text === null ? loading() : painted(text, marks));
    };
    return el("div", {class: "view", id: "match-view"},
      el("h2", {}, `${id}: ${spans.length} shared span${spans.length === 1 ? "" : "s"}, ${fmt(identical)} identical characters`),
      el("p", {class: "muted"}, "Same colour = the same aligned span on both sides (hover a span for its identical characters)."),
      el("div", {class: "members"}, side(data.documents[a], ca, 0), side(data.documents[b], cb, 1)));
  }

  function clusterList() {
    const section = el("section", {id: "cluster-list"}, el("h2", {}, "Clusters"));
    const search = el("input", {type: "search", id: "filter-text", placeholder: "search text, title, source, file", value: state.query,
      oninput: (e) => { state.query = e.target.value.trim(); state.page = 0; draw(); }});
    const source = el("select", {id: "filter-source", onchange: (e) => { state.source = e.target.value; state.page = 0; draw(); }},
      el("option", {value: ""}, "all sources"), ...data.sources.map((x) => el("option", {value: x.name}, x.name)));
    source.value = state.source;
    const size = el("input", {type: "number", id: "filter-size", min: "2", value: String(state.minSize), style: "width:4em",
      onchange: (e) => { state.minSize = Number(e.target.value) || 2; state.page = 0; draw(); }});
    const sim = el("input", {type: "number", id: "filter-similarity", min: "0", max: "1", step: "0.05", value: String(state.minSim), style: "width:5em",
      onchange: (e) => { state.minSim = Number(e.target.value) || 0; state.page = 0; draw(); }});
    section.append(el("div", {class: "controls"}, search, source, "min. passages", size, "min. Jaccard", sim));
    if (state.source && !data.sources.some((x) => x.name === state.source)) {
      source.append(el("option", {value: state.source}, `${state.source} (not in this report)`));
      source.value = state.source;
      section.append(el("p", {class: "notice", id: "no-source"},
        `No source named “${state.source}” in this report: choose one of the sources listed.`));
    }
    const shown = sorted(data.clusters.filter(matches));
    if (state.query && waiting) {
      const parts = data.parts.clusters || 0;
      const here = new Set(Object.values(full).map((c) => c.id)).size;
      section.append(el("p", {class: "notice", id: "searching"},
        `Searching the text: ${fmt(here)} of ${fmt(data.clusters.length)} clusters loaded from ${fmt(parts)} parts…`));
    }
    if (state.open) {
      // The open cluster's page is shown, whatever page was; if it is not in the list, say why.
      const at = shown.findIndex((c) => c.id === state.open);
      if (at >= 0) state.page = Math.floor(at / PAGE);
      else {
        const known = data.clusters.some((c) => c.id === state.open);
        section.append(el("p", {class: "notice", id: "not-shown"}, known
          ? `Cluster ${state.open} does not pass the filters below; clear them to see it.`
          : data.clusters.length < data.clusters_total
            ? `Cluster ${state.open} is not on this page, which holds the largest clusters only; report.json has it.`
            : `There is no cluster ${state.open} in this report.`));
      }
    }
    const header = (label, key) => el("th", {class: "sortable", onclick: () => {
      state.desc = state.sort === key ? !state.desc : true; state.sort = key; draw(); }}, label + (state.sort === key ? (state.desc ? " ▼" : " ▲") : ""));
    const rows = el("table", {id: "clusters"},
      el("tr", {}, header("cluster", "id"), header("passages", "size"), header("best Jaccard", "similarity"),
        el("th", {class: "left"}, "sources"), el("th", {class: "left"}, "chapter"), el("th", {class: "left"}, "begins")));
    const page = shown.slice(state.page * PAGE, (state.page + 1) * PAGE);
    for (const cluster of page) {
      const row = el("tr", {class: "row" + (state.open === cluster.id ? " open" : ""), "data-cluster": cluster.id,
        onclick: () => { state.open = state.open === cluster.id ? null : cluster.id; draw(); }},
        el("td", {class: "left"}, cluster.id + (cluster.giant ? " (giant: likely boilerplate)" : "")), el("td", {}, cluster.size), el("td", {}, cluster.best.toFixed(2)),
        el("td", {class: "left"}, cluster.sources.join(", ")), el("td", {class: "left"}, cluster.title || ""),
        el("td", {class: "left"}, cluster.begins + "…"));
      rows.append(row);
      if (state.open === cluster.id) {
        const whole = clusterOf(cluster);
        rows.append(el("tr", {}, el("td", {colspan: "6", class: "left"}, whole ? clusterView(whole) : loading())));
      }
    }
    section.append(el("p", {class: "muted", id: "shown-count"}, `${fmt(shown.length)} of ${fmt(data.clusters.length)} clusters shown`), rows);
    if (data.clusters.length < data.clusters_total) {
      section.insertBefore(el("p", {class: "notice", id: "page-limit"},
        `This page holds the ${fmt(data.clusters.length)} largest of ${fmt(data.clusters_total)} clusters: ` +
        "with the text of all of them it would be too big for a browser to open. The overview above counts every cluster; " +
        "report.json beside this file holds them all."), section.children[1]);
    }
    const pages = Math.ceil(shown.length / PAGE);
    if (pages > 1) {
      section.append(el("div", {class: "pager"}, `page ${state.page + 1} of ${pages}`,
        el("button", {onclick: () => { state.open = null; state.page = Math.max(0, state.page - 1); draw(); }}, "previous"),
        el("button", {onclick: () => { state.open = null; state.page = Math.min(pages - 1, state.page + 1); draw(); }}, "next")));
    }
    return section;
  }

  // The view is in the URL: index.html#q=TEXT&source=NAME&size=3&sim=0.5&sort=id&order=asc&
  // page=2&cluster=c3 (and pair=A~B&match=m4&mpage=2 for documents) opens the report just so, and every change is written back to it, so a
  // view can be shared or bookmarked; editing the hash on an open page redraws it.
  const DEFAULTS = {q: "", source: "", size: "2", sim: "0", sort: "size", order: "desc", page: "1", cluster: "",
    pair: "", match: "", mpage: "1"};
  function toHash() {
    const values = {q: state.query, source: state.source, size: String(state.minSize), sim: String(state.minSim),
      sort: state.sort, order: state.desc ? "desc" : "asc", page: String(state.page + 1), cluster: state.open || "",
      pair: state.pair, match: state.match || "", mpage: String(state.matchPage + 1)};
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(values)) if (value !== DEFAULTS[key]) params.set(key, value);
    return params.toString();
  }
  function fromHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    const get = (key) => params.get(key) ?? DEFAULTS[key];
    state.query = get("q").trim();
    state.source = get("source");
    state.minSize = Math.max(2, Number(get("size")) || 2);
    state.minSim = Math.min(1, Math.max(0, Number(get("sim")) || 0));
    state.sort = ["size", "similarity", "id"].includes(get("sort")) ? get("sort") : "size";
    state.desc = get("order") !== "asc";
    state.page = Math.max(0, (Number(get("page")) || 1) - 1);
    state.open = get("cluster") || null;
    state.pair = get("pair");
    state.match = get("match") || null;
    state.matchPage = Math.max(0, (Number(get("mpage")) || 1) - 1);
  }
  let drawnHash = null;
  function draw() {
    const focused = document.activeElement && document.activeElement.id;
    const opened = state.match ? "match-view" : state.open ? "view" : null;
    app.replaceChildren(overview(), documentSection(), clusterList());
    if (focused) { const again = document.getElementById(focused); if (again) again.focus(); }
    const hash = toHash();
    if (hash !== location.hash.slice(1)) history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
    drawnHash = hash;
    drawnAt = performance.now();
    return opened;
  }
  // The open view is scrolled to once it is drawn: at once, or when its part has come.
  let scrollTo = null;
  function show() {
    fromHash();
    scrollTo = draw();
    scrolled();
  }
  function scrolled() {
    const view = scrollTo && document.getElementById(scrollTo);
    if (view) { view.scrollIntoView(); scrollTo = null; }
  }
  function redraw() {
    draw();
    scrolled();
  }
  window.addEventListener("hashchange", () => { if (location.hash.slice(1) !== drawnHash) show(); });
  show();
  document.body.setAttribute("data-ready", "1");
})();
