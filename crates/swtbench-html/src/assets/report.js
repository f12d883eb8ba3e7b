// swtbench report page: filtering, sorting and instance details.
// Builds every element with the DOM API and sets text with textContent only: data from patches and
// logs is never parsed as HTML. State lives in the URL fragment (#q=…&repo=…&outcome=…&sort=…&open=…)
// so a filtered view can be linked and reloaded.
(function () {
  "use strict";
  var t0 = performance.now();
  var doc = document;
  var root = doc.documentElement;
  var table = doc.getElementById("itable");
  if (!table) { return; }
  var tbody = table.tBodies[0];
  var ncols = table.tHead.rows[0].cells.length;
  var items = [];
  var byKey = {};
  Array.prototype.forEach.call(tbody.rows, function (tr, i) {
    var it = { tr: tr, key: tr.id.slice(2), text: tr.cells[0].textContent.toLowerCase(), order: i, detail: null };
    items.push(it);
    byKey[it.key] = it;
  });
  var controls = doc.getElementById("controls");
  var shown = doc.getElementById("shown");
  var qInput = doc.getElementById("f-q");
  var selects = Array.prototype.slice.call(controls.querySelectorAll("select[data-key]"));
  var sortState = { col: -1, dir: 1 };
  var data = null;

  function getData() {
    if (data === null) {
      try { data = JSON.parse(doc.getElementById("swt-data").textContent); }
      catch (e) { data = { d: {} }; }
    }
    return data;
  }

  // Calls back with the detail of an instance, or with an error message. Plain pages carry all
  // details in `d`; large pages carry gzip chunks, decompressed on first use and kept.
  var chunkCache = {};
  function loadDetail(it, cb) {
    var dt = getData();
    if (dt.d) { cb(dt.d[it.key] || null); return; }
    var ci = Math.floor(it.order / (dt.per || 1));
    if (chunkCache[ci]) { cb(chunkCache[ci][it.key] || null); return; }
    if (!dt.chunks || typeof dt.chunks[ci] !== "string") { cb(null); return; }
    if (typeof DecompressionStream === "undefined" || typeof Response === "undefined") {
      cb(null, "This browser cannot unpack the embedded details (it lacks DecompressionStream).");
      return;
    }
    var bin = atob(dt.chunks[ci]);
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text().then(
      function (t) { chunkCache[ci] = JSON.parse(t); cb(chunkCache[ci][it.key] || null); },
      function (e) { cb(null, "Cannot unpack the embedded details: " + e); });
  }

  function el(tag, cls, text) {
    var e = doc.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  // Relative file paths arrive raw; each segment is percent-encoded so `#`, `?` and spaces in run ids
  // or instance ids stay part of the path.
  function encPath(p) {
    return p.split("/").map(encodeURIComponent).join("/");
  }

  function link(href, text) {
    var a = el("a", null, text);
    a.setAttribute("href", href);
    return a;
  }

  // ---- URL fragment state ----
  function readHash() {
    var out = {};
    var h = location.hash.replace(/^#/, "");
    if (!h) { return out; }
    h.split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i < 0) { return; }
      try { out[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1).replace(/\+/g, " ")); }
      catch (e) { /* ignore malformed pairs */ }
    });
    return out;
  }

  function writeHash() {
    var parts = [];
    if (qInput.value) { parts.push("q=" + encodeURIComponent(qInput.value)); }
    selects.forEach(function (s) {
      if (s.value) { parts.push(s.getAttribute("data-key") + "=" + encodeURIComponent(s.value)); }
    });
    if (sortState.col >= 0) { parts.push("sort=" + sortState.col + "&dir=" + (sortState.dir > 0 ? "asc" : "desc")); }
    var open = items.filter(function (it) { return it.detail; }).map(function (it) { return it.key; });
    if (open.length) { parts.push("open=" + open.map(encodeURIComponent).join(",")); }
    var h = parts.length ? "#" + parts.join("&") : location.pathname + location.search;
    if (history.replaceState) { history.replaceState(null, "", h); }
  }

  function applyHash() {
    var st = readHash();
    qInput.value = st.q || "";
    selects.forEach(function (s) {
      var v = st[s.getAttribute("data-key")] || "";
      var ok = Array.prototype.some.call(s.options, function (o) { return o.value === v; });
      s.value = ok ? v : "";
    });
    if (st.sort !== undefined) {
      sortBy(parseInt(st.sort, 10), st.dir === "desc" ? -1 : 1);
    }
    filter();
    if (st.open) {
      var first = null;
      st.open.split(",").forEach(function (k) {
        var it = byKey[k];
        if (it && !it.detail) { toggle(it); }
        if (it && !first) { first = it; }
      });
      if (first && first.tr.scrollIntoView) {
        // Stop below the sticky filter bar and column headers, however tall they wrapped.
        first.tr.style.scrollMarginTop = (controls.offsetHeight + table.tHead.offsetHeight + 4) + "px";
        first.tr.scrollIntoView();
      }
    }
  }

  // ---- filtering ----
  function filter() {
    var tf = performance.now();
    var q = qInput.value.trim().toLowerCase();
    var conds = selects.filter(function (s) { return s.value; }).map(function (s) {
      return [s.getAttribute("data-attr"), s.value];
    });
    var n = 0;
    for (var i = 0; i < items.length; i++) {
      var it = items[i];
      var ok = !q || it.text.indexOf(q) >= 0;
      for (var j = 0; ok && j < conds.length; j++) {
        ok = it.tr.getAttribute(conds[j][0]) === conds[j][1];
      }
      it.tr.hidden = !ok;
      if (it.detail) { it.detail.hidden = !ok; }
      if (ok) { n++; }
    }
    shown.textContent = n + " of " + items.length + " instances shown";
    root.setAttribute("data-shown", String(n));
    root.setAttribute("data-filter-ms", (performance.now() - tf).toFixed(1));
  }

  // ---- sorting ----
  function sortBy(col, dir) {
    var th = table.tHead.rows[0].cells[col];
    if (!th || !th.hasAttribute("data-sort")) { return; }
    var numeric = th.getAttribute("data-sort") === "num";
    var keyOf = function (it) {
      var c = it.tr.cells[col];
      if (numeric) { var v = parseFloat(c.getAttribute("data-v")); return isNaN(v) ? -1 : v; }
      return c.textContent.toLowerCase();
    };
    var keyed = items.map(function (it) { return [keyOf(it), it]; });
    keyed.sort(function (a, b) {
      if (a[0] < b[0]) { return -dir; }
      if (a[0] > b[0]) { return dir; }
      return a[1].order - b[1].order;
    });
    var frag = doc.createDocumentFragment();
    items = keyed.map(function (k) { return k[1]; });
    items.forEach(function (it) {
      frag.appendChild(it.tr);
      if (it.detail) { frag.appendChild(it.detail); }
    });
    tbody.appendChild(frag);
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c, i) {
      if (i === col) { c.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending"); }
      else { c.removeAttribute("aria-sort"); }
    });
    sortState.col = col;
    sortState.dir = dir;
  }

  // ---- instance details ----
  var RUNS = ["pred_pre", "pred_post", "gold_pre", "gold_post", "base_pre", "base_post"];
  var CODE_TITLE = { P: "passed", F: "failed", E: "error", S: "skipped", O: "other status", "-": "not reported", x: "not passed (failed, errored or absent)" };

  function toggle(it) {
    if (it.detail) {
      it.detail.parentNode.removeChild(it.detail);
      it.detail = null;
      return;
    }
    var tr = el("tr", "detail");
    var td = el("td");
    td.colSpan = ncols;
    var wait = el("p", "na", "Loading…");
    td.appendChild(wait);
    tr.appendChild(td);
    tr.hidden = it.tr.hidden;
    it.tr.parentNode.insertBefore(tr, it.tr.nextSibling);
    it.detail = tr;
    loadDetail(it, function (det, err) {
      if (it.detail !== tr) { return; }
      td.removeChild(wait);
      if (det) { renderDetail(td, det, it); }
      else { td.appendChild(el("p", "na", err || "No details recorded for this instance.")); }
      root.setAttribute("data-details-ms", performance.now().toFixed(1));
    });
  }

  function renderDetail(td, det, it) {
    td.setAttribute("data-instance", it.key);
    if (det.n && det.n.length) {
      var ul = el("ul", "notes");
      det.n.forEach(function (s) { ul.appendChild(el("li", null, s)); });
      td.appendChild(ul);
    }
    if (det.l && det.l.length) {
      var p = el("p", "links");
      det.l.forEach(function (l) { p.appendChild(link(encPath(l[1]), l[0])); p.appendChild(doc.createTextNode(" ")); });
      td.appendChild(p);
    }
    td.appendChild(el("h4", null, "Runs"));
    td.appendChild(renderRuns(det.r || []));
    td.appendChild(el("h4", null, "Tests (pre → post per run pair)"));
    td.appendChild(renderGrid(det.t));
    td.appendChild(el("h4", null, "Model test patch"));
    td.appendChild(det.mp ? renderDiff(det.mp, false, "mp") : el("p", "na", "No model patch recorded."));
    td.appendChild(el("h4", null, "Gold code fix"));
    if (det.gf && det.gf.cov) {
      td.appendChild(el("p", "legend-line",
        "Per changed line: M = the model's tests executed it, G = the gold tests did, B = the base runs did " +
        "(removed lines in the runs before the fix, added lines in the runs after it). Unmarked lines are not executable."));
    }
    td.appendChild(det.gf ? renderDiff(det.gf, !!det.gf.cov, "gf") : el("p", "na", "Gold fix not available."));
  }

  function renderRuns(runs) {
    var t = el("table", "runs");
    var head = el("tr");
    head.appendChild(el("th"));
    runs.forEach(function (r) { head.appendChild(el("th", null, r.k)); });
    t.appendChild(head);
    var rowDir = el("tr"); rowDir.appendChild(el("th", null, "logs"));
    var rowOut = el("tr"); rowOut.appendChild(el("th", null, "test output"));
    var rowApp = el("tr"); rowApp.appendChild(el("th", null, "patch applied"));
    var rowCnt = el("tr"); rowCnt.appendChild(el("th", null, "passed / failed / other"));
    runs.forEach(function (r) {
      var c = el("td", "files");
      if (r.d) {
        c.appendChild(link(encPath(r.d), "dir"));
        (r.f || []).forEach(function (f) { c.appendChild(link(encPath(r.d + f), f)); });
      } else {
        c.appendChild(el("span", "na", "not found"));
      }
      rowDir.appendChild(c);
      rowOut.appendChild(el("td", r.o ? null : "na", r.o ? "yes" : "missing"));
      rowApp.appendChild(el("td", null, r.a === undefined ? "?" : (r.a ? "yes" : "no")));
      rowCnt.appendChild(el("td", "num", r.c ? r.c.join(" / ") : "?"));
    });
    [rowDir, rowOut, rowApp, rowCnt].forEach(function (r) { t.appendChild(r); });
    return t;
  }

  function renderGrid(g) {
    var box = el("div");
    if (!g || !g.n || !g.n.length) {
      box.appendChild(el("p", "na", "No test results recorded." + (g && g.op ? " " + g.op + " tests passed in every run." : "")));
      return box;
    }
    var t = el("table", "grid");
    var h1 = el("tr");
    h1.appendChild(el("th", null, "test"));
    ["pred", "gold", "base"].forEach(function (p) { var th = el("th", null, p); th.colSpan = 2; h1.appendChild(th); });
    t.appendChild(h1);
    var h2 = el("tr");
    h2.appendChild(el("th"));
    for (var i = 0; i < 3; i++) { h2.appendChild(el("th", null, "pre")); h2.appendChild(el("th", null, "post")); }
    t.appendChild(h2);
    for (var r = 0; r < g.n.length; r++) {
      var tr = el("tr");
      tr.appendChild(el("td", "t", g.n[r]));
      var code = g.c[r] || "";
      for (var k = 0; k < 6; k++) {
        var ch = code.charAt(k) || "-";
        var c = el("td", "c c-" + ch, ch === "-" ? "–" : ch);
        c.setAttribute("title", RUNS[k] + ": " + (CODE_TITLE[ch] || ch));
        tr.appendChild(c);
      }
      t.appendChild(tr);
    }
    box.appendChild(t);
    var more = [];
    if (g.oo) { more.push(g.oo + " more tests not shown"); }
    if (g.op) { more.push(g.op + " tests that passed in every run not shown"); }
    if (!g.e) { more.push("statuses from report.json transition buckets"); }
    if (more.length) { box.appendChild(el("p", "legend-line", more.join("; ") + ".")); }
    return box;
  }

  function renderDiff(v, marks, which) {
    var box = el("div", "diff");
    box.setAttribute("data-diff", which);
    if (v.err) {
      box.appendChild(el("div", "fh", "not a parseable diff: " + v.err));
      box.appendChild(el("pre", "raw", v.raw || ""));
    }
    (v.f || []).forEach(function (f) {
      var name = f.o && f.n && f.o !== f.n ? f.o + " → " + f.n : (f.n || f.o || "?");
      box.appendChild(el("div", "fh", f.c + ": " + name + (f.b ? " (binary)" : "")));
      var t = el("table");
      (f.h || []).forEach(function (h) {
        var hh = el("tr", "hh");
        var htd = el("td", null, h.h);
        htd.colSpan = marks ? 4 : 3;
        hh.appendChild(htd);
        t.appendChild(hh);
        var o = h.os, n = h.ns;
        for (var i = 0; i < h.l.length; i++) {
          var k = h.k.charAt(i);
          var tr = el("tr", k === "+" ? "add" : (k === "-" ? "del" : "ctx"));
          tr.appendChild(el("td", "ln", k === "+" ? "" : o));
          tr.appendChild(el("td", "ln", k === "-" ? "" : n));
          if (marks) {
            var m = h.m ? h.m.charAt(i) : " ";
            var mk = el("td", "mk");
            if (m !== " ") {
              var fl = parseInt(m, 16) || 0;
              if (!(fl & 8)) { mk.className = "mk noexec"; mk.setAttribute("title", "not executable"); }
              else {
                var who = [];
                [["M", 1, "model tests"], ["G", 2, "gold tests"], ["B", 4, "base runs"]].forEach(function (x) {
                  var s = el("span", fl & x[1] ? "on" : null, x[0]);
                  if (fl & x[1]) { who.push(x[2]); }
                  mk.appendChild(s);
                });
                mk.setAttribute("title", who.length ? "executed by " + who.join(", ") : "executed by none");
                mk.setAttribute("data-flags", String(fl));
              }
            }
            tr.appendChild(mk);
          }
          var code = el("td", "code", h.l[i]);
          code.setAttribute("data-p", k === " " ? " " : k);
          tr.appendChild(code);
          t.appendChild(tr);
          if (k !== "+") { o++; }
          if (k !== "-") { n++; }
        }
        if (h.t) {
          var cut = el("tr", "hh cut");
          var ctd = el("td", null, "The hunk ends here, short of the line counts in its header: the patch is cut or malformed at this point (git apply rejects it).");
          ctd.colSpan = marks ? 4 : 3;
          cut.appendChild(ctd);
          t.appendChild(cut);
        }
      });
      box.appendChild(t);
    });
    if (v.tr) { box.appendChild(el("div", "fh", v.tr + " more lines not shown (see the log directory).")); }
    if (!v.err && !(v.f && v.f.length)) { box.appendChild(el("div", "fh", "(empty)")); }
    return box;
  }

  // ---- wiring ----
  controls.hidden = false;
  Array.prototype.forEach.call(doc.querySelectorAll(".js-only"), function (e) { e.hidden = false; });
  qInput.addEventListener("input", function () { filter(); writeHash(); });
  selects.forEach(function (s) { s.addEventListener("change", function () { filter(); writeHash(); }); });
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
    if (!th.hasAttribute("data-sort")) { return; }
    th.setAttribute("tabindex", "0");
    var go = function () { sortBy(i, sortState.col === i ? -sortState.dir : 1); writeHash(); };
    th.addEventListener("click", go);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") { go(); } });
  });
  tbody.addEventListener("click", function (e) {
    var a = e.target.closest ? e.target.closest("a[href^='#open=']") : null;
    if (!a) { return; }
    e.preventDefault();
    var it = byKey[a.getAttribute("href").slice(6)];
    if (it) { toggle(it); writeHash(); }
  });
  window.addEventListener("hashchange", applyHash);
  applyHash();
  root.setAttribute("data-ready-ms", performance.now().toFixed(1));
  root.setAttribute("data-init-ms", (performance.now() - t0).toFixed(1));
  // Timings for anyone measuring the page (the browser test and the perf example read them).
  function paintMs() {
    var p = performance.getEntriesByType ? performance.getEntriesByType("paint") : [];
    for (var i = 0; i < p.length; i++) {
      if (p[i].name === "first-contentful-paint") { return p[i].startTime.toFixed(1); }
    }
    return null;
  }
  window.addEventListener("load", function () {
    root.setAttribute("data-load-ms", performance.now().toFixed(1));
    var f = paintMs();
    if (f) { root.setAttribute("data-fcp-ms", f); }
    else { setTimeout(function () { var g = paintMs(); if (g) { root.setAttribute("data-fcp-ms", g); } }, 0); }
  });
})();
