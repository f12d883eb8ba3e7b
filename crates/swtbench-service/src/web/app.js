// swtbench service page: sends a predictions file as a batch (POST /v1/batches), follows it
// (GET /v1/batches/{id} once a second until every evaluation is final), shows an evaluation's
// events live (its Server-Sent Events stream), the batch's leaderboard, and the list of batches.
// Everything the service sends is shown with textContent or as attribute values: instance ids,
// model names, errors and events are never parsed as HTML. A bearer token, when the service asks
// for one, lives in this tab's sessionStorage only.
(function () {
  "use strict";
  var TOKEN_KEY = "swtbench-token";
  var BATCH_ID = /^run[0-9a-f]{24}$/;
  var FINAL = { done: true, failed: true, cancelled: true };
  var LEADERBOARD = [
    ["applicability", "Applicability (W)"],
    ["success_rate", "Success rate (S)"],
    ["f_to_x", "F\u2192X"],
    ["f_to_p", "F\u2192P"],
    ["p_to_p", "P\u2192P"],
    ["coverage_delta_all", "Coverage \u0394 (all)"],
    ["coverage_delta_resolved", "Coverage \u0394 (resolved)"],
    ["coverage_delta_unresolved", "Coverage \u0394 (unresolved)"]
  ];
  var doc = document;

  function $(id) { return doc.getElementById(id); }

  function el(tag, text, cls) {
    var e = doc.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }

  function clear(node) {
    while (node.firstChild) { node.removeChild(node.firstChild); }
  }

  function token() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ""; } catch (e) { return ""; }
  }

  function setToken(value) {
    try {
      if (value) { sessionStorage.setItem(TOKEN_KEY, value); } else { sessionStorage.removeItem(TOKEN_KEY); }
    } catch (e) { /* storage refused: the token is not kept */ }
  }

  function authHeaders(extra) {
    var h = extra || {};
    var t = token();
    if (t) { h.Authorization = "Bearer " + t; }
    return h;
  }

  function say(node, text, isError) {
    node.textContent = text;
    node.classList.toggle("error", !!isError);
  }

  // One request to the service: resolves to {status, ok, json, text}. A 401 shows the token form.
  function api(method, path, body, contentType, signal) {
    var init = {
      method: method,
      headers: authHeaders(contentType ? { "Content-Type": contentType } : {}),
      cache: "no-store",
      credentials: "omit"
    };
    if (body !== undefined) { init.body = body; }
    if (signal) { init.signal = signal; }
    return fetch(path, init).then(function (r) {
      return r.text().then(function (text) {
        var json = null;
        try { json = JSON.parse(text); } catch (e) { json = null; }
        if (r.status === 401) { needToken(json); }
        return { status: r.status, ok: r.ok, json: json, text: text };
      });
    });
  }

  // The service's error, in words: message, field, hint and code.
  function errorText(res) {
    var e = res.json && res.json.error;
    if (!e) { return "the service answered HTTP " + res.status; }
    var s = String(e.message || e.code);
    if (e.field) { s += " (field " + e.field + ")"; }
    if (e.hint) { s += ". " + e.hint; }
    return s + " [" + e.code + "]";
  }

  // ---- token ----

  function needToken(json) {
    var section = $("token-section");
    section.hidden = false;
    var msg = json && json.error ? json.error.message : "this service needs a bearer token";
    say($("upload-status"), "Give the service's bearer token above: " + msg + ".", true);
  }

  $("token-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var input = $("token-input");
    setToken(input.value.trim());
    input.value = "";
    say($("upload-status"), token() ? "Token set for this tab." : "", false);
    loadBatches(false);
    route();
  });

  $("token-forget").addEventListener("click", function () {
    setToken("");
    say($("upload-status"), "Token forgotten.", false);
  });

  // ---- health ----

  function loadHealth() {
    fetch("/healthz", { cache: "no-store", credentials: "omit" })
      .then(function (r) { return r.json(); })
      .then(function (h) {
        var q = h.queue || {};
        var parts = ["queued", "running", "done", "failed", "cancelled"].map(function (k) {
          return (q[k] || 0) + " " + k;
        });
        say($("health"), "Service up: " + h.workers + " worker(s); queue: " + parts.join(", ") + ".", false);
      })
      .catch(function () { say($("health"), "The service does not answer.", true); });
  }

  // ---- upload ----

  function contentTypeOf(text) {
    var t = text.replace(/^\s+/, "");
    if (t.charAt(0) === "[") { return "application/json"; }
    if (t.charAt(0) === "{") {
      try { JSON.parse(text); return "application/json"; } catch (e) { return "application/x-ndjson"; }
    }
    return "application/x-ndjson";
  }

  $("upload-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var status = $("upload-status");
    var input = $("predictions-file");
    var file = input.files && input.files[0];
    if (!file) { say(status, "Choose a predictions file first.", true); return; }
    var button = $("upload-button");
    button.disabled = true;
    say(status, "Sending " + file.name + "\u2026", false);
    file.text().then(function (text) {
      return api("POST", "/v1/batches", text, contentTypeOf(text));
    }).then(function (res) {
      if (res.status === 202 && res.json && BATCH_ID.test(res.json.id)) {
        var n = (res.json.evaluations || []).length;
        say(status, "Batch " + res.json.id + " accepted: " + n + " evaluation(s).", false);
        loadBatches(false);
        if (location.hash === "#batch=" + res.json.id) { showBatch(res.json.id, true); } else { location.hash = "batch=" + res.json.id; }
      } else {
        say(status, file.name + " was refused: " + errorText(res), true);
      }
    }, function (e) {
      say(status, "Sending " + file.name + " failed: " + e, true);
    }).then(function () { button.disabled = false; });
  });

  // ---- one batch ----

  var current = null;

  function showBatch(id, focus) {
    if (current) { clearTimeout(current.timer); current.stopped = true; }
    stopEvents();
    current = { id: id, timer: null, stopped: false, rows: [], leaderboard: false };
    $("batch-section").hidden = false;
    $("batch-title").textContent = "Batch " + id;
    clear($("batch-table").tBodies[0]);
    $("leaderboard").hidden = true;
    $("events").hidden = true;
    say($("batch-summary"), "Loading\u2026", false);
    if (focus) { $("batch-title").setAttribute("tabindex", "-1"); $("batch-title").focus(); }
    poll(current);
  }

  function poll(c) {
    api("GET", "/v1/batches/" + encodeURIComponent(c.id)).then(function (res) {
      if (c.stopped) { return; }
      if (!res.ok || !res.json) {
        say($("batch-summary"), "Batch " + c.id + ": " + errorText(res), true);
        if (res.status !== 404 && res.status !== 401) { c.timer = setTimeout(function () { poll(c); }, 2000); }
        return;
      }
      renderBatch(c, res.json);
      if (res.json.done) {
        loadLeaderboard(c);
        loadHealth();
        loadBatches(false);
      } else {
        c.timer = setTimeout(function () { poll(c); }, 1000);
      }
    }, function () {
      if (!c.stopped) { c.timer = setTimeout(function () { poll(c); }, 2000); }
    });
  }

  function countsText(counts) {
    return ["queued", "running", "done", "failed", "cancelled"].filter(function (k) {
      return counts && counts[k];
    }).map(function (k) { return counts[k] + " " + k; }).join(", ");
  }

  function verdictText(ev) {
    if (ev.state === "failed") { return "failed: " + (ev.error || "no cause given"); }
    if (ev.state === "cancelled") { return "cancelled"; }
    var v = ev.verdict;
    if (!v) { return ""; }
    return String(v.outcome || (v.resolved ? "resolved" : "unresolved")).replace(/_/g, " ");
  }

  function runsText(ev) {
    var r = ev.verdict && ev.verdict.runs;
    if (!r) { return ""; }
    return r.executed + " run, " + r.reused + " reused";
  }

  function newRow(c, i) {
    var tr = el("tr");
    for (var k = 0; k < 8; k++) { tr.appendChild(el(k === 1 ? "th" : "td")); }
    tr.cells[1].setAttribute("scope", "row");
    tr.cells[0].textContent = String(i + 1);
    var button = el("button", "Events");
    button.type = "button";
    button.addEventListener("click", function () {
      var id = tr.getAttribute("data-id");
      if (id) { openEvents(id, tr.cells[1].textContent); }
    });
    tr.cells[7].appendChild(button);
    c.rows[i] = tr;
    $("batch-table").tBodies[0].appendChild(tr);
    return tr;
  }

  function reportLink(id) {
    var url = "/v1/evaluations/" + encodeURIComponent(id) + "/report.html";
    var a = el("a", "Report", "report-link");
    a.href = url;
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    a.addEventListener("click", function (ev) {
      if (!token()) { return; }
      // A link cannot carry the token: fetch the page with it and open a copy of it.
      ev.preventDefault();
      openWithToken(url);
    });
    return a;
  }

  function openWithToken(url) {
    var w = window.open("about:blank", "_blank");
    if (w) { w.opener = null; }
    api("GET", url).then(function (res) {
      if (!res.ok) {
        if (w) { w.close(); }
        say($("batch-summary"), "The report could not be opened: " + errorText(res), true);
        return;
      }
      var blobUrl = URL.createObjectURL(new Blob([res.text], { type: "text/html" }));
      if (w) { w.location.href = blobUrl; } else { window.open(blobUrl, "_blank"); }
      setTimeout(function () { URL.revokeObjectURL(blobUrl); }, 60000);
    });
  }

  function renderBatch(c, b) {
    var evs = b.evaluations || [];
    var finished = 0;
    evs.forEach(function (ev, i) {
      if (FINAL[ev.state]) { finished++; }
      var tr = c.rows[i] || newRow(c, i);
      tr.setAttribute("data-id", String(ev.id));
      tr.setAttribute("data-state", String(ev.state));
      var outcome = ev.verdict && ev.verdict.outcome ? String(ev.verdict.outcome) : "";
      tr.setAttribute("data-outcome", outcome);
      tr.cells[1].textContent = String(ev.instance_id);
      tr.cells[2].textContent = String(ev.model_name_or_path);
      tr.cells[3].textContent = String(ev.state);
      tr.cells[4].textContent = verdictText(ev);
      tr.cells[5].textContent = runsText(ev);
      var cell = tr.cells[6];
      if (ev.state === "done" && outcome && outcome !== "empty_patch" && outcome !== "error" && !cell.firstChild) {
        cell.appendChild(reportLink(String(ev.id)));
      }
    });
    var total = evs.length;
    var progress = $("batch-progress");
    progress.max = total || 1;
    progress.value = finished;
    var pct = total ? Math.round(100 * finished / total) : 0;
    progress.setAttribute("aria-valuetext", finished + " of " + total + " evaluations finished");
    $("batch-progress-text").textContent = finished + " of " + total + " finished (" + pct + "%)";
    var summary = (b.done ? "Done" : "Running") + ": " + countsText(b.counts) + "; " + b.resolved + " resolved.";
    say($("batch-summary"), summary, false);
    $("batch-section").setAttribute("data-done", b.done ? "true" : "false");
  }

  function loadLeaderboard(c) {
    if (c.leaderboard) { return; }
    c.leaderboard = true;
    api("GET", "/v1/batches/" + encodeURIComponent(c.id) + "/leaderboard").then(function (res) {
      if (c.stopped || !res.ok || !res.json) { return; }
      var f = res.json.figures || {};
      var body = $("leaderboard-table").tBodies[0];
      clear(body);
      LEADERBOARD.forEach(function (row) {
        var v = f[row[0]];
        if (typeof v !== "number") { return; }
        var tr = el("tr");
        tr.setAttribute("data-metric", row[0]);
        var th = el("th", row[1]);
        th.setAttribute("scope", "row");
        tr.appendChild(th);
        tr.appendChild(el("td", v.toFixed(2), "num"));
        body.appendChild(tr);
      });
      $("leaderboard-caption").textContent = "Over the batch's " + res.json.denominator +
        " prediction(s), " + res.json.graded + " graded (no coverage rows: no gold run)";
      $("leaderboard").hidden = false;
    });
  }

  // ---- one evaluation's events, live ----

  var events = null;

  function stopEvents() {
    if (events) { events.abort(); events = null; }
  }

  function addEvent(kind, data) {
    var list = $("events-list");
    var li = el("li");
    li.appendChild(el("strong", kind));
    var text = data;
    try {
      var rec = JSON.parse(data);
      if (kind === "event" && rec && rec.event) {
        li.firstChild.textContent = String(rec.event);
      } else if (kind === "verdict" && rec && rec.state) {
        text = rec.state + (rec.verdict && rec.verdict.outcome ? ": " + rec.verdict.outcome : "");
      }
    } catch (e) { /* shown as it came */ }
    li.appendChild(el("span", " " + (text.length > 400 ? text.slice(0, 400) + "\u2026" : text)));
    list.appendChild(li);
    while (list.childNodes.length > 500) { list.removeChild(list.firstChild); }
  }

  function openEvents(id, instance) {
    stopEvents();
    var ctl = new AbortController();
    events = ctl;
    $("events").hidden = false;
    $("events-title").textContent = "Events of " + instance + " (" + id + ")";
    clear($("events-list"));
    fetch("/v1/evaluations/" + encodeURIComponent(id) + "/stream", {
      headers: authHeaders({ Accept: "text/event-stream" }),
      cache: "no-store",
      credentials: "omit",
      signal: ctl.signal
    }).then(function (r) {
      if (!r.ok || !r.body) { addEvent("error", "the stream answered HTTP " + r.status); return; }
      var reader = r.body.getReader();
      var decoder = new TextDecoder();
      var buf = "";
      function pump() {
        return reader.read().then(function (chunk) {
          if (chunk.done) { return; }
          buf += decoder.decode(chunk.value, { stream: true }).replace(/\r\n/g, "\n");
          var end;
          while ((end = buf.indexOf("\n\n")) >= 0) {
            var block = buf.slice(0, end);
            buf = buf.slice(end + 2);
            var kind = "message";
            var data = [];
            block.split("\n").forEach(function (line) {
              if (line.indexOf("event:") === 0) { kind = line.slice(6).trim(); }
              if (line.indexOf("data:") === 0) { data.push(line.slice(5).replace(/^ /, "")); }
            });
            if (data.length) { addEvent(kind, data.join("\n")); }
          }
          return pump();
        });
      }
      return pump();
    }).catch(function (e) {
      if (e && e.name !== "AbortError") { addEvent("error", String(e)); }
    });
  }

  // ---- the list of batches ----

  var nextPage = null;

  function loadBatches(more) {
    var path = more && nextPage ? nextPage : "/v1/batches?limit=20";
    if (path.indexOf("/v1/batches?") !== 0) { return; }
    api("GET", path).then(function (res) {
      var status = $("batches-status");
      if (!res.ok || !res.json) { say(status, "The batches cannot be listed: " + errorText(res), true); return; }
      say(status, "", false);
      var body = $("batches-table").tBodies[0];
      if (!more) { clear(body); }
      (res.json.batches || []).forEach(function (b) {
        var tr = el("tr");
        tr.setAttribute("data-id", String(b.id));
        var th = el("th");
        th.setAttribute("scope", "row");
        var a = el("a", b.id);
        if (BATCH_ID.test(b.id)) { a.href = "#batch=" + b.id; }
        th.appendChild(a);
        tr.appendChild(th);
        tr.appendChild(el("td", new Date(b.created * 1000).toLocaleString()));
        tr.appendChild(el("td", b.size, "num"));
        tr.appendChild(el("td", b.done ? "done" : countsText(b.counts)));
        tr.appendChild(el("td", b.resolved + " of " + b.size, "num"));
        body.appendChild(tr);
      });
      if (!body.rows.length) {
        var empty = el("tr");
        var td = el("td", "No batch yet.");
        td.colSpan = 5;
        empty.appendChild(td);
        body.appendChild(empty);
      }
      nextPage = typeof res.json.next === "string" ? res.json.next : null;
      $("batches-more").hidden = !nextPage;
    }, function () {
      say($("batches-status"), "The service does not answer.", true);
    });
  }

  $("batches-more").addEventListener("click", function () { loadBatches(true); });

  // ---- the address: #batch=ID shows that batch ----

  function route() {
    var m = /^#batch=(run[0-9a-f]{24})$/.exec(location.hash);
    if (m) { showBatch(m[1], false); }
  }

  window.addEventListener("hashchange", function () {
    var m = /^#batch=(run[0-9a-f]{24})$/.exec(location.hash);
    if (m && (!current || current.id !== m[1])) { showBatch(m[1], true); }
  });

  loadHealth();
  setInterval(loadHealth, 10000);
  loadBatches(false);
  route();
})();
