"use strict";
// agentsessions view: draws the page from its JSON script elements. Every piece of session
// content goes through textContent (el, add): never innerHTML, never an attribute that runs.
(function () {
  var meta = JSON.parse(document.getElementById("meta").textContent);
  var app = document.getElementById("app");
  var GROUPS_PER_PAGE = 25;
  var RECORDS_PER_STEP = 200;
  var ready = document.readyState !== "loading";
  var waiting = [];
  document.addEventListener("DOMContentLoaded", function () {
    ready = true;
    document.documentElement.setAttribute("data-ready-ms", performance.now().toFixed(1));
    waiting.splice(0).forEach(function (fn) { fn(); });
  });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var k = arguments[i];
      if (k === null || k === undefined || k === false) continue;
      parent.appendChild(typeof k === "object" ? k : document.createTextNode(String(k)));
    }
    return parent;
  }
  function clip(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }
  function oneLine(s) { return String(s).replace(/\s+/g, " ").trim(); }
  function json(v) { return JSON.stringify(v); }
  function pageOf(uid) { return /^sess-[0-9A-Za-z_-]+$/.test(uid) ? uid + ".html" : null; }
  function link(text, href, cls) { var a = el("a", cls, text); if (href) a.href = href; return a; }
  function timeNs(ns) {
    var n = Number(ns);
    return n > 0 ? new Date(n / 1e6).toISOString().replace(".000Z", "Z") : "-";
  }
  function pairs(obj) {
    var keys = Object.keys(obj || {}).sort();
    return keys.length ? keys.map(function (k) { return k + "=" + obj[k]; }).join(", ") : "-";
  }
  function section(title, id) {
    var s = add(el("section", "panel"), el("h2", null, title));
    if (id) s.id = id;
    return s;
  }
  function dl(rows) {
    var d = el("dl", "meta");
    rows.forEach(function (r) { if (r) add(d, el("dt", null, r[0]), el("dd", r[2] || null, r[1])); });
    return d;
  }

  // --- verify badge ---------------------------------------------------------------------
  function badge(v) {
    if (!v) return el("span", "badge unknown", "not verified");
    if (v.ok) {
      return el("span", "badge ok", "\u2713 chain verified: " + v.records + " records, last seq " + v.last_seq);
    }
    var where = v.first_bad_seq !== null && v.first_bad_seq !== undefined ?
      " at seq " + v.first_bad_seq : "";
    var b = el("span", "badge bad", "\u2717 does not verify" + where + ": " + v.reason);
    b.setAttribute("data-first-bad-seq", v.first_bad_seq === null ? "" : String(v.first_bad_seq));
    return b;
  }

  // --- fork tree ------------------------------------------------------------------------
  function tree(nodes, currentPage) {
    var byParent = {}, uids = {};
    nodes.forEach(function (n) { uids[n.uid] = true; });
    nodes.forEach(function (n) {
      var p = uids[n.parent] ? n.parent : "";
      (byParent[p] = byParent[p] || []).push(n);
    });
    function branch(parent) {
      var ul = el("ul", "tree");
      (byParent[parent] || []).forEach(function (n) {
        var li = el("li", n.current ? "node current" : "node");
        li.setAttribute("data-uid", n.uid);
        var label = n.name ? n.name + " (" + n.uid + ")" : n.uid;
        add(li, n.current ? el("strong", null, label) : link(label, pageOf(n.uid)));
        if (n.parent) {
          var here = currentPage && (n.current || n.parent === currentPage);
          var fork = "forked at seq " + n.fork_seq;
          add(li, " \u00b7 ", here ? link(fork, "#seq-" + n.fork_seq, "forkpoint") :
            el("span", "forkpoint", fork));
        }
        add(li, el("span", "dim", " \u00b7 last seq " + n.last_seq + " \u00b7 " +
          String(n.exec_state).replace("EXEC_", "")));
        if (byParent[n.uid]) add(li, branch(n.uid));
        ul.appendChild(li);
      });
      return ul;
    }
    return branch("");
  }

  // --- records --------------------------------------------------------------------------
  var chunks = meta.chunks || [], parsed = {};
  function chunkIndex(seq) {
    var lo = 0, hi = chunks.length - 1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (seq < chunks[mid][0]) hi = mid - 1;
      else if (seq >= chunks[mid][0] + chunks[mid][1]) lo = mid + 1;
      else return mid;
    }
    return -1;
  }
  function record(seq) { // [seq, hash, event], undefined if absent, null if not parsed yet
    var k = chunkIndex(seq);
    if (k < 0) return undefined;
    if (!parsed[k]) {
      var node = document.getElementById("c" + k);
      if (!node) return null;
      parsed[k] = JSON.parse(node.textContent);
    }
    var r = parsed[k][seq - chunks[k][0]];
    return r && r[0] === seq ? r : undefined;
  }
  function text(message) {
    return (message && message.parts || []).map(function (p) {
      if (p.text) return p.text.text || "";
      if (p.tool_call) return "[tool call " + (p.tool_call.tool || "") + "]";
      if (p.tool_result) return "[tool result " + (p.tool_result.id || "") + "]";
      if (p.data) return json(p.data.data);
      if (p.file) return "[file " + (p.file.name || p.file.mime || "") + "]";
      if (p.reasoning) return "[reasoning]";
      return "";
    }).join(" ");
  }
  function actor(a) {
    return a ? [a.principal, a.subject].filter(Boolean).join(" / ") || "-" : "-";
  }
  var SUMMARY = {
    EVENT_INPUT: function (e) { return (e.message && e.message.role || "") + ": " + text(e.message); },
    EVENT_OUTPUT: function (e) { return (e.message && e.message.role || "") + ": " + text(e.message); },
    EVENT_MODEL_CALL: function (e) { var m = e.model || {}; return "model call " + (m.model || "") + " id=" + (m.id || ""); },
    EVENT_TOOL_CALL: function (e) { var t = e.tool || {}; return "tool call " + (t.tool || "") + "(" + json(t.args || {}) + ") id=" + (t.id || ""); },
    EVENT_TOOL_RESULT: function (e) {
      var r = e.result || {};
      return "tool result " + (r.id || "") + ": " + (r.is_error ? "error " + (r.error || "") : json(r.output || {}));
    },
    EVENT_APPROVAL_REQUEST: function (e) { var a = e.approval || {}; return "approval requested for " + (a.tool_call_id || "") + (a.reason ? ": " + a.reason : ""); },
    EVENT_APPROVAL_RESULT: function (e) {
      var a = e.approval_result || {};
      return (a.approved ? "approved" : "denied") + " by " + actor(e.actor) + " (" + (a.tool_call_id || "") + ")" + (a.reason ? ": " + a.reason : "");
    },
    EVENT_USAGE: function (e) { var u = e.usage || {}; return "usage " + (u.model || "") + ": " + (u.input_tokens || 0) + " in, " + (u.output_tokens || 0) + " out" + (u.reasoning_tokens ? ", " + u.reasoning_tokens + " reasoning" : ""); },
    EVENT_LIFECYCLE: function (e) { var l = e.lifecycle || {}; return String(l.kind || "").replace("LIFECYCLE_", "") + " " + (l.detail || ""); },
    EVENT_END: function (e) { var d = e.end || {}; return "END " + (d.state || "") + (d.error ? ": " + (d.error.description || "") : ""); },
    EVENT_ERROR: function (e) { var d = e.error || {}; return "error " + (d.code || 0) + ": " + (d.description || ""); },
    EVENT_EXECUTION_START: function (e) { var s = e.execution_start || {}; return "start harness=" + (s.harness || "") + " inputs=" + (s.input_count || 0) + (s.resume_from_seq ? " resume from " + s.resume_from_seq : ""); }
  };
  function summary(event) {
    var f = SUMMARY[event.kind];
    return clip(oneLine(f ? f(event) : json(event)), 240);
  }
  var marks = {}; // seq -> fork notes drawn after that record
  (function () {
    var s = meta.session || {};
    if (s.parent_uid) note(s.fork_seq, "forked from " + s.parent_uid + " after seq " + s.fork_seq + ": records up to here are the parent's", s.parent_uid);
    (meta.tree || []).forEach(function (n) { if (n.parent === s.uid) note(n.fork_seq, "fork point: " + (n.name || n.uid) + " branches here", n.uid); });
    function note(seq, text, uid) { (marks[seq] = marks[seq] || []).push([text, uid]); }
  })();
  function recordRow(r) {
    var e = r[2], kind = String(e.kind || "").replace("EVENT_", "");
    var d = el("details", "rec kind-" + kind.toLowerCase());
    d.id = "seq-" + r[0];
    var s = add(el("summary"), el("span", "seq", r[0]), el("span", "kind", kind),
      el("span", "time", e.ts ? String(e.ts).replace(/(\.\d{3})\d*Z$/, "$1Z") : "-"), el("span", "hash", r[1].slice(0, 12)), el("span", "sum", summary(e)));
    s.lastChild.previousSibling.title = r[1];
    add(d, s, add(el("div", "body"), dl([["content hash", r[1], "mono"],
      ["execution", e.execution_id || "-", "mono"], ["actor", actor(e.actor)]]),
      el("pre", "event", JSON.stringify(e, null, 2))));
    return d;
  }
  function forkRows(seq) {
    return (marks[seq] || []).map(function (m) {
      var row = el("div", "forkmark");
      add(row, "\u21b3 ", m[1] ? link(m[0], pageOf(m[1])) : m[0]);
      return row;
    });
  }

  // --- timeline -------------------------------------------------------------------------
  var groups = meta.groups || [], page = 0;
  var pages = Math.max(1, Math.ceil(groups.length / GROUPS_PER_PAGE));
  var list, pager;
  function groupIndex(seq) {
    var lo = 0, hi = groups.length - 1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (seq < groups[mid].a) hi = mid - 1; else if (seq > groups[mid].b) lo = mid + 1; else return mid;
    }
    return -1;
  }
  function groupRow(i) {
    var g = groups[i], d = el("details", "group state-" + (g.s || "open").toLowerCase());
    d.id = "g-" + i;
    var head = el("summary");
    add(head, el("span", "exec", g.x ? "execution " + g.x : "session event"),
      el("span", "seqs", "seq " + g.a + (g.b > g.a ? "\u2013" + g.b : "")),
      el("span", "count", g.n + (g.n === 1 ? " record" : " records")),
      g.x ? el("span", "state", g.s || "OPEN") : null, el("span", "time", g.t || ""));
    if (g.h) add(head, el("span", "dim", g.h));
    if (g.m || g.k) add(head, el("span", "dim", g.m + " model, " + g.k + " tool calls"));
    if (g.u) add(head, el("span", "tokens", g.u[0] + " in / " + g.u[1] + " out tokens"));
    (g.f || []).forEach(function (f) { add(head, el("span", "flag flag-" + f, f)); });
    for (var s in marks) if (+s >= g.a && +s <= g.b) add(head, el("span", "flag flag-fork", "fork point"));
    if (g.p) add(head, el("span", "preview", clip(oneLine(g.p), 160)));
    add(d, head);
    d.addEventListener("toggle", function () { if (d.open && !d.drawn) drawGroup(d, g, g.a); });
    return d;
  }
  function drawGroup(d, g, from) {
    d.drawn = true;
    var body = el("div", "records");
    var start = Math.max(g.a, from), end = Math.min(g.b, start + RECORDS_PER_STEP - 1);
    if (start > g.a) add(body, more("show earlier records", function () { redraw(d, g, Math.max(g.a, start - RECORDS_PER_STEP)); }));
    for (var seq = start; seq <= end; seq++) {
      var r = record(seq);
      if (r === null) { add(body, el("p", "dim", "loading\u2026")); whenReady(function () { redraw(d, g, start); }); break; }
      if (r === undefined) { add(body, el("p", "warn", "record " + seq + " could not be read")); break; }
      add(body, recordRow(r));
      forkRows(seq).forEach(function (row) { body.appendChild(row); });
    }
    if (end < g.b) add(body, more("show records " + (end + 1) + "\u2013" + Math.min(g.b, end + RECORDS_PER_STEP), function () { extend(body, d, g, end + 1); }));
    var old = d.querySelector(".records");
    if (old) old.remove();
    d.appendChild(body);
  }
  function redraw(d, g, from) { d.drawn = false; drawGroup(d, g, from); }
  function extend(body, d, g, from) {
    body.lastChild.remove();
    var end = Math.min(g.b, from + RECORDS_PER_STEP - 1);
    for (var seq = from; seq <= end; seq++) {
      var r = record(seq);
      if (!r) break;
      add(body, recordRow(r));
      forkRows(seq).forEach(function (row) { body.appendChild(row); });
    }
    if (end < g.b) add(body, more("show records " + (end + 1) + "\u2013" + Math.min(g.b, end + RECORDS_PER_STEP), function () { extend(body, d, g, end + 1); }));
  }
  function more(label, fn) { var b = el("button", "more", label); b.type = "button"; b.addEventListener("click", fn); return b; }
  function whenReady(fn) { if (ready) fn(); else waiting.push(fn); }
  function drawPage(p) {
    page = Math.max(0, Math.min(pages - 1, p));
    list.textContent = "";
    for (var i = page * GROUPS_PER_PAGE; i < Math.min(groups.length, (page + 1) * GROUPS_PER_PAGE); i++) list.appendChild(groupRow(i));
    pager.querySelector(".where").textContent = "page " + (page + 1) + " of " + pages + " (" + groups.length + " groups, " + meta.records + " records)";
  }
  function goTo(seq) {
    var i = groupIndex(seq);
    if (i < 0) return false;
    drawPage(Math.floor(i / GROUPS_PER_PAGE));
    var d = document.getElementById("g-" + i);
    d.open = true;
    redraw(d, groups[i], Math.max(groups[i].a, seq - 20));
    var target = document.getElementById("seq-" + seq);
    if (target) { target.open = true; target.classList.add("target"); target.scrollIntoView(); }
    return true;
  }
  function timeline() {
    var s = section("Timeline", "timeline");
    pager = el("div", "pager");
    var input = el("input"); input.type = "number"; input.min = "1"; input.placeholder = "seq";
    add(pager, more("\u2190 previous", function () { drawPage(page - 1); }), el("span", "where"),
      more("next \u2192", function () { drawPage(page + 1); }), input,
      more("go to seq", function () { goTo(parseInt(input.value, 10)); }));
    list = el("div", "groups");
    add(s, pager, list);
    if (!groups.length) add(s, el("p", "dim", "no records"));
    return s;
  }

  // --- the pages ------------------------------------------------------------------------
  function sessionPage() {
    var s = meta.session, v = meta.verify;
    document.title = (s.name || s.uid) + " \u00b7 agentsessions view";
    var head = add(el("header"), el("h1", null, "session " + (s.name || s.uid)), el("div", "uid mono", s.uid), badge(v));
    if (v && !v.ok && record(v.first_bad_seq)) add(head, " ", link("go to seq " + v.first_bad_seq, "#seq-" + v.first_bad_seq, "back"));
    if (meta.index) add(head, " ", link("all sessions", meta.index, "back"));
    add(app, head);
    if (meta.read_error) add(app, el("p", "warn", (meta.records ? "the records after seq " + meta.records : "the records") + " could not be read: " + meta.read_error));
    var ws = s.working_state || {};
    var u = meta.usage || {};
    add(app, add(section("Session"), dl([
      ["project", s.project], ["name", s.name || "-"], ["harness", s.harness || "-"], ["model", s.model || "-"],
      ["labels", pairs(s.labels)], ["annotations", pairs(s.annotations)],
      ["created", timeNs(s.create_time_ns)], ["updated", timeNs(s.update_time_ns)],
      ["last seq", s.last_seq], ["last hash", s.last_hash || "-", "mono"], ["exec state", s.exec_state],
      ["compute state", s.compute_state], ["fence", s.fence], ["deleted", s.deleted ? "yes" : "no"],
      s.parent_uid ? ["forked from", s.parent_uid + " after seq " + s.fork_seq] : null,
      s.pending_approval ? ["waiting for approval", json(s.pending_approval)] : null,
      s.unresolved_call ? ["unresolved tool call", json(s.unresolved_call)] : null,
      ["working state", ws.version ? "version " + ws.version + ", covers seq " + ws.covers_from + "\u2013" + ws.covers_to + ", " + ws.size + " bytes" : "none"],
      ["token usage", meta.usage_records ? u.input_tokens + " input, " + u.output_tokens + " output, " + u.reasoning_tokens + " reasoning tokens (" + meta.usage_records + " model calls reported usage)" : "none recorded"]
    ])));
    add(app, add(section("Fork tree", "forks"), tree(meta.tree || [], s.uid)));
    if ((meta.stores || []).length) add(app, stores(meta.stores));
    add(app, timeline());
    drawPage(0);
  }
  function stores(list) {
    var s = section("Tool stores", "stores");
    list.forEach(function (st) {
      var box = add(el("div", "store"), el("h3", null, st.name + " \u00b7 " + (st.ok ? "verified" : "does not verify") + " \u00b7 " + st.records + " records"));
      if (st.error) add(box, el("p", "warn", st.error));
      var t = add(el("table"), add(el("tr"), el("th", null, "seq"), el("th", null, "author"), el("th", null, "time"), el("th", null, "data")));
      (st.entries || []).forEach(function (e) {
        add(t, add(el("tr"), el("td", "mono", e.seq), el("td", null, e.author), el("td", null, timeNs(e.time_ns)), el("td", "mono", clip(json(e.data), 400))));
      });
      add(box, t);
      if (st.more) add(box, el("p", "dim", st.more + " more entries not shown"));
      add(s, box);
    });
    return s;
  }
  function indexPage() {
    document.title = "project " + meta.project + " \u00b7 agentsessions view";
    add(app, add(el("header"), el("h1", null, "project " + meta.project), el("div", "dim", meta.sessions.length + " sessions, newest first")));
    var t = add(el("table", "sessions"), add(el("tr"), el("th", null, "session"), el("th", null, "name"),
      el("th", null, "harness"), el("th", null, "records"), el("th", null, "exec"), el("th", null, "updated"), el("th", null, "chain")));
    var nodes = [];
    meta.sessions.forEach(function (s) {
      var row = add(el("tr"), add(el("td", "mono"), s.page ? link(s.uid, pageOf(s.uid)) : s.uid), el("td", null, s.name || "-"),
        el("td", null, s.harness || "-"), el("td", null, s.last_seq), el("td", null, String(s.exec_state).replace("EXEC_", "")),
        el("td", null, timeNs(s.update_time_ns)), add(el("td"), s.damaged ? el("span", "badge bad", "damaged: " + s.damaged) : badge(s.view ? { ok: s.view.verified, records: s.view.records, last_seq: s.last_seq, first_bad_seq: s.view.first_bad_seq, reason: s.view.reason } : null)));
      t.appendChild(row);
      nodes.push({ uid: s.uid, name: s.name, parent: s.parent_uid, fork_seq: s.fork_seq, last_seq: s.last_seq, exec_state: s.exec_state });
    });
    add(app, add(section("Sessions"), t), add(section("Fork tree", "forks"), tree(nodes, "")));
  }

  if (meta.page === "index") indexPage(); else sessionPage();
  // when the first screen was drawn (since navigation started): what bench/view.py reads
  document.documentElement.setAttribute("data-first-screen-ms", performance.now().toFixed(1));
  function fromHash() {
    var m = /^#seq-(\d+)$/.exec(location.hash);
    if (m) whenReady(function () { goTo(parseInt(m[1], 10)); });
  }
  window.addEventListener("hashchange", fromHash);
  if (meta.page !== "index") fromHash();
})();
