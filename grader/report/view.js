/* evaltape view: draws the page from its data chunks (grader/report/view.py).
 * Plain JavaScript, no library, no build step. Every recorded string is inserted as text
 * (text nodes, textContent), never as markup. */
(function () {
  "use strict";

  var META = JSON.parse(document.getElementById("evaltape-meta").textContent);
  var LIM = META.limits;
  var app = document.getElementById("app");
  var collator = new Intl.Collator("en", { numeric: true, sensitivity: "base" });

  /* ------------------------------------------------------------------ DOM helpers */
  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "class") el.className = v;
        else if (k.slice(0, 2) === "on") el.addEventListener(k.slice(2), v);
        else el.setAttribute(k, v === true ? "" : String(v));
      });
    }
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }
  function add(el, kid) {
    if (kid === null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) { kid.forEach(function (k) { add(el, k); }); return; }
    el.appendChild(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); }
  function fmt(x, d) {
    if (x === null || x === undefined) return "n/a";
    return Number(x).toFixed(d === undefined ? 3 : d);
  }
  function int(x) { return x === null || x === undefined ? "n/a" : Number(x).toLocaleString("en-US"); }
  function num1(x) { return x === null || x === undefined ? "n/a" : Number.isInteger(x) ? String(x) : x.toFixed(1); }
  function pct(x) { return x === null || x === undefined ? "n/a" : (100 * x).toFixed(1) + "%"; }
  function secs(x) { return x === null || x === undefined ? "n/a" : Number(x).toFixed(x < 10 ? 2 : 1) + " s"; }
  function usd(x) { return x === null || x === undefined ? "n/a" : "$" + Number(x).toFixed(x < 1 ? 4 : 2); }
  function bar(value, lower) {
    if (value === null || value === undefined) return h("span", { class: "muted" }, "n/a");
    var w = Math.max(0, Math.min(1, value)) * 100;
    return h("span", null, h("span", { class: lower ? "bar low" : "bar" },
      h("span", { style: "width:" + w.toFixed(1) + "%" })), fmt(value));
  }
  function badge(kind, label) { return h("span", { class: "badge " + kind }, label); }
  function cut(s, n) { s = s || ""; return s.length > n ? s.slice(0, n) + "…" : s; }

  /* long text: a <pre> that opens fully on demand */
  function pre(textValue, plainStyle) {
    var p = h("pre", { class: "t" + (plainStyle ? " plain" : "") }, textValue);
    if ((textValue || "").length < 1800) return p;
    var b = h("button", { class: "btn more", type: "button" }, "show all (" + int(textValue.length) + " characters)");
    b.addEventListener("click", function () {
      var open = p.classList.toggle("open");
      b.textContent = open ? "show less" : "show all (" + int(textValue.length) + " characters)";
    });
    return h("div", null, p, b);
  }

  /* ------------------------------------------------------------------ chunks */
  var cache = {};
  var waiting = {};
  window.evaltapeChunk = function (name, value) {
    cache[name] = value;
    var w = waiting[name];
    if (w) { delete waiting[name]; w.resolve(value); }
  };
  function load(name) {
    if (Object.prototype.hasOwnProperty.call(cache, name)) return Promise.resolve(cache[name]);
    var inline = document.querySelector('script[type="application/json"][data-chunk="' + name + '"]');
    if (inline) {
      cache[name] = JSON.parse(inline.textContent);
      inline.textContent = "";
      return Promise.resolve(cache[name]);
    }
    if (waiting[name]) return waiting[name].promise;
    var w = {};
    w.promise = new Promise(function (resolve, reject) { w.resolve = resolve; w.reject = reject; });
    waiting[name] = w;
    var s = document.createElement("script");
    s.src = META.data_dir + "/" + name + ".js";
    s.onerror = function () { delete waiting[name]; w.reject(new Error("cannot load " + s.src)); };
    document.head.appendChild(s);
    return w.promise;
  }
  function loaded(name) { return Object.prototype.hasOwnProperty.call(cache, name); }

  /* ------------------------------------------------------------------ runs */
  var RUNS = META.runs.map(function (m, r) {
    return { m: m, r: r, eps: null, cases: null, names: m.metrics.map(function (x) { return x.name; }),
             open: {}, keyIndex: null, reasons: null, ready: null };
  });
  var LAST = RUNS.length - 1;
  // index row fields (view.py index_row)
  var C = 0, T = 1, V = 2, F = 3, O = 4, S = 5, TI = 6, TO = 7, L = 8, K = 9, SC = 10, FL = 11, A = 12, N = 13;

  /* ------------------------------------------------------------------ review (served page only)
     The server that serves the page puts #evaltape-review in it (token, reviewer, the runs
     that can be reviewed); an exported page has none and is read-only. Marks are read and
     written with fetch on the same server; every mark and note is shown as text. */
  var REVIEW = (function () {
    var el = document.getElementById("evaltape-review");
    try { return el ? JSON.parse(el.textContent) : null; } catch (err) { return null; }
  })();
  function reviewable(run) { return !!REVIEW && REVIEW.runs.indexOf(run.r) >= 0; }
  function reviewApi(run, method, body) {
    return fetch("/api/reviews?r=" + run.r, {
      method: method, credentials: "same-origin", cache: "no-store",
      headers: method === "POST" ? { "Content-Type": "application/json", "X-Evaltape-Token": REVIEW.token }
        : { "X-Evaltape-Token": REVIEW.token },
      body: body ? JSON.stringify(body) : undefined
    }).then(function (res) {
      return res.json().then(function (v) {
        if (!res.ok) throw new Error(v && v.error ? v.error : "HTTP " + res.status);
        return v;
      });
    });
  }
  function loadReviews(run) {
    if (!reviewable(run)) return Promise.resolve(null);
    if (run.rv) return Promise.resolve(run.rv);
    return reviewApi(run, "GET").then(function (st) {
      var rv = { marks: {}, human: {}, toReview: {}, file: st.file, error: null };
      st.marks.forEach(function (m) { rv.marks[m.episode + "\u0000" + m.target] = m; });
      st.human.forEach(function (k) { rv.human[k] = true; });
      st.to_review.forEach(function (k) { rv.toReview[k] = true; });
      run.rv = rv;
      return rv;
    }).catch(function (err) {
      run.rv = { marks: {}, human: {}, toReview: {}, error: err.message };
      return run.rv;
    });
  }
  function epKey(run, i) { var e = run.eps[i]; return run.cases[e[C]][0] + "#t" + e[T]; }
  function markOf(run, i, target) { return run.rv ? run.rv.marks[epKey(run, i) + "\u0000" + target] || null : null; }
  /* the review queues of the list: not reviewed, reviewer disagrees (with the verdict, or a
     metric or judge marked wrong), grounding claims to review, human-graded cases */
  function reviewMatches(run, i, q) {
    var rv = run.rv;
    if (!rv) return false;
    var key = epKey(run, i), m = markOf(run, i, "episode");
    if (q === "todo") return !m || !!m.stale;
    if (q === "human") return !!rv.human[key];
    if (q === "claims") return !!rv.toReview[key];
    if (q === "disagree") {
      if (m && !m.stale && (m.mark === "pass") !== !!run.eps[i][V]) return true;
      return Object.keys(rv.marks).some(function (k) {
        var x = rv.marks[k];
        return x.episode === key && x.target !== "episode" && x.target.slice(0, 6) !== "claim:" && x.mark === "wrong" && !x.stale;
      });
    }
    return true;
  }
  function saveMark(run, i, target, mark, note) {
    return reviewApi(run, "POST", { episode: epKey(run, i), target: target, mark: mark, note: note || "" })
      .then(function (v) {
        if (run.rv) run.rv.marks[v.mark.episode + "\u0000" + v.mark.target] = v.mark;
        return v.mark;
      });
  }
  function markText(m) {
    if (!m) return "not reviewed";
    return m.mark.toUpperCase() + " by " + m.reviewer + " at " + m.at + (m.stale ? " (stale: recorded again since)" : "");
  }
  /* the episode's review bar: its mark, the keys p f n, and the note box */
  function reviewBar(run, i) {
    if (!reviewable(run)) {
      return h("p", { class: "muted small", id: "readonly" }, "This page is read-only: reviews are made in the page that " +
        "`evaltape view RUN` serves, and go to RUN/reviews.jsonl.");
    }
    var bar = h("section", { class: "panel review", id: "review" });
    var state = h("span", { id: "review-state" });
    var noteShown = h("div", { class: "small review-note", id: "review-note-shown" });
    var msg = h("span", { class: "small", id: "review-msg", "aria-live": "polite" });
    var box = h("textarea", { id: "review-note", rows: 2, placeholder: "Note (Enter saves, Shift+Enter a new line, Esc leaves)", "aria-label": "review note", hidden: true });
    function show() {
      var m = markOf(run, i, "episode");
      clear(state);
      add(state, [h("b", null, "Your review: "), m ? badge(m.mark === "pass" ? "pass" : "fail", m.mark.toUpperCase()) : badge("na", "NOT REVIEWED"),
        m ? h("span", { class: "muted small" }, " by " + m.reviewer + " at " + m.at) : null,
        m && m.stale ? h("span", { class: "warn small" }, " stale: the episode was recorded again since this mark") : null]);
      clear(noteShown);
      if (m && m.note) add(noteShown, ["note: ", h("span", { class: "mono" }, m.note)]);
    }
    function save(mark) {
      var note = box.hidden ? ((markOf(run, i, "episode") || {}).note || "") : box.value;
      msg.textContent = "saving…";
      return saveMark(run, i, "episode", mark, note).then(function () {
        msg.textContent = "saved to reviews.jsonl";
        box.hidden = true;
        show();
      }).catch(function (err) { msg.textContent = "not saved: " + err.message; });
    }
    function editNote() {
      box.hidden = false;
      var m = markOf(run, i, "episode");
      if (!box.value && m) box.value = m.note || "";
      box.focus();
    }
    box.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" && !ev.shiftKey) {
        ev.preventDefault();
        var m = markOf(run, i, "episode");
        if (m) { save(m.mark); box.blur(); } else msg.textContent = "mark pass (p) or fail (f) to save the note with it";
        if (!m) box.blur();
      }
    });
    current.review = { pass: function () { save("pass"); }, fail: function () { save("fail"); }, note: editNote };
    add(bar, h("div", { class: "pb" }, h("div", { class: "review-row" }, state, h("span", { class: "spacer" }),
      h("button", { type: "button", class: "btn", id: "review-pass", title: "mark the episode pass (p)", onclick: function () { save("pass"); } }, "pass (p)"),
      h("button", { type: "button", class: "btn", id: "review-fail", title: "mark the episode fail (f)", onclick: function () { save("fail"); } }, "fail (f)"),
      h("button", { type: "button", class: "btn", id: "review-note-btn", title: "write a note (n)", onclick: editNote }, "note (n)"),
      msg), noteShown, box, h("div", { id: "review-items" })));
    if (run.rv && run.rv.error) msg.textContent = "reviews cannot be read: " + run.rv.error;
    show();
    return bar;
  }
  /* right / wrong for each metric result, judge verdict and grounding claim of the episode */
  function reviewItems(run, i, d) {
    var holder = document.getElementById("review-items");
    if (!holder || !reviewable(run)) return;
    var items = [];
    d.metrics.forEach(function (m) {
      if (m[3] !== true && m[3] !== false) return;
      var judge = /judge/.test(m[0]);
      items.push([(judge ? "judge:" : "metric:") + m[0], (judge ? "judge " : "") + m[0] + ": " + (m[3] ? "PASS" : "FAIL")]);
    });
    var answer = d.answer || "";
    (d.claims || []).forEach(function (cl, n) {
      items.push(["claim:" + cl[0] + "-" + cl[1], "claim " + (n + 1) + " (unsupported) '" + cut(answer.slice(cl[0], cl[1]), 80) + "'"]);
    });
    (d.review || []).forEach(function (cl, n) {
      items.push(["claim:" + cl[0] + "-" + cl[1], "claim r" + (n + 1) + " (to review) '" + cut(answer.slice(cl[0], cl[1]), 80) + "'"]);
    });
    if (!items.length) return;
    var rows = items.map(function (it) {
      var cell = h("td", { class: "small" });
      function show() { clear(cell); var m = markOf(run, i, it[0]); add(cell, m ? [badge(m.mark === "right" ? "pass" : "fail", m.mark), " ", h("span", { class: "muted" }, m.reviewer + (m.stale ? " (stale)" : "")), m.note ? h("span", { class: "mono" }, " " + m.note) : null] : h("span", { class: "muted" }, "not reviewed")); }
      function mark(v) {
        var old = markOf(run, i, it[0]);
        saveMark(run, i, it[0], v, old ? old.note : "").then(show).catch(function (err) { clear(cell); add(cell, h("span", { class: "fail" }, "not saved: " + err.message)); });
      }
      show();
      return h("tr", { "data-target": it[0] }, h("td", null, it[1]), cell,
        h("td", null, h("button", { type: "button", class: "btn small", onclick: function () { mark("right"); } }, "right"), " ",
          h("button", { type: "button", class: "btn small", onclick: function () { mark("wrong"); } }, "wrong")));
    });
    add(holder, h("details", { class: "review-items", open: true }, h("summary", { class: "small" }, "Mark the graders right or wrong (" + items.length + ")"),
      h("table", { class: "small" }, h("tbody", null, rows))));
  }

  function loadRun(run) {
    if (run.ready) return run.ready;
    var names = [run.m.chunks.cases].concat(run.m.chunks.index);
    run.ready = Promise.all(names.map(load)).then(function (parts) {
      run.cases = parts[0];
      var eps = [];
      for (var i = 1; i < parts.length; i++) for (var j = 0; j < parts[i].length; j++) eps.push(parts[i][j]);
      run.eps = eps;
      var reasons = {};
      run.m.reasons.forEach(function (kv) { reasons[kv[0]] = kv[1]; });
      run.reasons = reasons;
      return run;
    });
    return run.ready;
  }
  /* why an episode failed: its outcome reason, else "gate:<metric>" for each gating metric
     that failed (an episode may fail several) */
  function reasonsOf(run, e) {
    if (e[V]) return [];
    if (e[O]) return [e[O]];
    var out = [];
    run.m.metrics.forEach(function (m, j) { if (m.gate && (e[FL][j] === "F" || e[FL][j] === "E")) out.push("gate:" + m.name); });
    return out.length ? out : ["gate"];
  }
  function reasonLabel(k) { return k === "gate" ? "a gating metric" : k.slice(0, 5) === "gate:" ? k.slice(5) + " (gating metric)" : k; }
  function textChunkOf(i) { return Math.floor(i / LIM.text_chunk); }
  function textOf(run, i) {
    var name = run.m.chunks.text[textChunkOf(i)];
    return name && loaded(name) ? cache[name][i % LIM.text_chunk] : null;
  }
  function ensureText(run, idxs) {
    var need = {};
    idxs.forEach(function (i) {
      var name = run.m.chunks.text[textChunkOf(i)];
      if (name && !loaded(name)) need[name] = true;
    });
    var names = Object.keys(need);
    return names.length ? Promise.all(names.map(load)) : null;
  }
  function allText(run, progress) {
    var names = run.m.chunks.text.filter(function (n) { return !loaded(n); });
    if (!names.length) return null;
    var done = 0;
    return names.reduce(function (p, n) {
      return p.then(function () { return load(n).then(function () { done++; if (progress) progress(done, names.length); }); });
    }, Promise.resolve());
  }
  function detail(run, i) {
    var name = run.m.chunks.ep[Math.floor(i / LIM.detail_chunk)];
    return load(name).then(function (rows) { return rows[i % LIM.detail_chunk]; });
  }
  function label(run, i) {
    var e = run.eps[i];
    return run.cases[e[C]][0] + (run.m.trials > 1 ? "#t" + e[T] : "");
  }
  function keyIndex(run) {
    if (!run.keyIndex) {
      var map = {};
      run.eps.forEach(function (e, i) { map[run.cases[e[C]][0] + "\u0000" + e[T]] = i; });
      run.keyIndex = map;
    }
    return run.keyIndex;
  }

  /* ------------------------------------------------------------------ routing */
  function parse() {
    var raw = location.hash.replace(/^#/, "");
    var q = raw.indexOf("?");
    var path = q < 0 ? raw : raw.slice(0, q);
    var params = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
    var parts = path.split("/");
    var view = parts[0] || "overview";
    var r = parseInt(parts[1], 10);
    if (!(r >= 0 && r < RUNS.length)) r = LAST;
    if (view === "case") {  /* #case/RUN/CASE_ID/TRIAL: one episode by its case and trial */
      var trial = parseInt(parts[3], 10);
      return { view: view, r: r, i: -1, params: params,
               key: decodeURIComponent(parts[2] || "") + "\u0000" + (trial >= 0 ? trial : 0) };
    }
    return { view: view, r: r, i: parseInt(parts[2], 10), params: params };
  }
  function go(hash, replace) {
    if (replace) { history.replaceState(null, "", "#" + hash); render(); }
    else if (location.hash === "#" + hash) render();
    else location.hash = hash;
  }
  window.addEventListener("hashchange", render);

  var current = { view: null };

  function frame(route) {
    var run = RUNS[route.r];
    var tabs = [["overview", "Overview"], ["episodes", "Episodes"]];
    if (META.compare) tabs.push(["compare", "Compare"]);
    var on = route.view === "episode" ? "episodes" : route.view;
    var sel = null;
    if (RUNS.length > 1) {
      sel = h("select", { "aria-label": "run", title: "which run to show",
        onchange: function () { go((on === "compare" ? "overview" : on) + "/" + this.value); } },
        RUNS.map(function (x) {
          return h("option", { value: x.r, selected: x.r === route.r },
            (x.r === 0 ? "baseline: " : "current: ") + x.m.label);
        }));
    }
    var top = h("div", { class: "top", role: "banner" },
      h("span", { class: "brand" }, "evaltape"),
      sel || h("span", { class: "runname", title: run.m.source }, run.m.label),
      h("nav", { class: "tabs", "aria-label": "views" }, tabs.map(function (t, n) {
        return h("a", { href: "#" + t[0] + (t[0] === "compare" ? "" : "/" + route.r),
          class: on === t[0] ? "on" : null, title: "key " + (n + 1) }, t[1]);
      })),
      h("span", { class: "spacer" }),
      h("button", { class: "help", type: "button", title: "keyboard (?)", onclick: help }, "? keys"));
    var main = h("main", { id: "main" });
    clear(app);
    app.appendChild(top);
    app.appendChild(main);
    return main;
  }

  function render() {
    var route = parse();
    var main = frame(route);
    listState = null;
    current = { view: route.view, r: route.r, route: route, main: main };
    var run = RUNS[route.r];
    if (route.view === "compare" && META.compare) return renderCompare(main);
    main.appendChild(h("p", { class: "loading" }, "Loading " + int(run.m.episodes) + " episodes…"));
    loadRun(run).then(function () { return loadReviews(run); }).then(function () {
      if (current.main !== main) return;
      clear(main);
      if (route.view === "case") {
        var at = keyIndex(run)[route.key];
        if (at === undefined) {
          main.appendChild(h("p", { class: "note", id: "nocase" }, "This run has no episode " +
            route.key.replace("\u0000", "#t") + "."));
          return renderList(main, run, route.params);
        }
        route.i = at;
        return renderEpisode(main, run, route);
      }
      if (route.view === "episode" && route.i >= 0 && route.i < run.eps.length) return renderEpisode(main, run, route);
      if (route.view === "episodes" || route.view === "episode") return renderList(main, run, route.params);
      return renderOverview(main, run);
    }).catch(function (err) {
      clear(main);
      main.appendChild(h("p", { class: "note" }, "This page could not load its data: " + err.message +
        ". Keep the page's data folder (" + (META.data_dir || "") + ") beside it."));
    });
  }

  /* ------------------------------------------------------------------ overview */
  function renderOverview(main, run) {
    var m = run.m, s = m.summary, u = m.usage;
    main.appendChild(h("h1", null, m.label));
    main.appendChild(h("p", { class: "muted" },
      "agent ", h("code", null, m.agent || "n/a"), ", model ", h("code", null, m.model || "n/a"),
      m.model_note ? " (" + m.model_note + ")" : "", " · ", int(s.cases), " cases × ", int(s.trials),
      " trial(s) = ", int(s.episodes), " episodes · ", m.source));
    if (m.note) main.appendChild(h("p", { class: "note" }, m.note));
    if (u.mismatched_traces) main.appendChild(h("p", { class: "note" }, u.mismatched_traces +
      " episode(s) were graded from another recording than the traces shown (their trace digests differ)."));
    var ci = s.ci;
    var cards = h("div", { class: "cards" },
      card("pass rate", pct(s.pass_rate), int(s.passed) + " of " + int(s.episodes) + " episodes pass" +
        (ci ? "; 95% interval " + fmt(ci[0]) + " to " + fmt(ci[1]) + " (Wilson, n = " + ci[2] + " cases)" : ""),
        "passrate"),
      card("episodes", int(s.episodes), int(s.cases) + " cases × " + int(s.trials) + " trial(s); tool accuracy " +
        fmt(s.exact_tool_match_rate) + ", " + fmt(s.avg_steps, 2) + " steps on average" +
        (s.infra_failures ? "; " + s.infra_failures + " ended by the infrastructure" : "")),
      kcard(s),
      card("tokens (in / out)", u.with_usage ? int(u.tokens_in) + " / " + int(u.tokens_out) : "n/a", u.with_usage ? "per episode " +
        int(Math.round(u.tokens_in_mean)) + " / " + int(Math.round(u.tokens_out_mean)) + (u.with_usage < u.episodes ? "; " + int(u.with_usage) + " episodes report usage" : "") : "no episode reports its token usage"),
      card("cost", usd(u.cost_usd), u.priced ? u.priced + " of " + int(u.episodes) + " episodes priced" :
        "no episode's model is in the price table"),
      card("latency (mean)", u.latency ? secs(u.latency.mean) : "n/a",
        u.latency ? "p50 " + secs(u.latency.p50) + ", p90 " + secs(u.latency.p90) + ", max " + secs(u.latency.max) : "no latency recorded"));
    main.appendChild(cards);
    if (s.unrecorded_count) main.appendChild(h("p", { class: "note" }, s.unrecorded_count +
      " dataset case(s) have no recorded episode: " + s.unrecorded.slice(0, 20).join(", ") + (s.unrecorded_count > 20 ? ", …" : "")));
    if (s.judge_not_recorded) main.appendChild(h("p", { class: "muted" }, s.judge_not_recorded +
      " judge answer(s) not recorded; record them with: ", h("code", null, s.judge_command)));

    main.appendChild(h("h2", null, "Metrics"));
    if (m.listed < m.episodes) main.appendChild(h("p", { class: "note" }, "The episode list holds the first " + int(m.listed) +
      " of " + int(m.episodes) + " episodes (dataset order, then trial); the numbers on this page cover all of them, and report.json lists every one."));
    var rows = m.metrics.map(function (x) {
      return h("tr", null,
        h("td", null, h("a", { href: "#episodes/" + run.r + "?m=" + encodeURIComponent(x.name), title: "episodes failing " + x.name }, x.name),
          x.lower ? h("span", { class: "muted" }, " (lower is better)") : null),
        h("td", { class: "nowrap" }, bar(x.mean, x.lower)),
        h("td", { class: "num" }, x.ci && x.ci[0] !== null ? fmt(x.ci[0]) + " to " + fmt(x.ci[1]) : "n/a"),
        h("td", null, x.threshold),
        h("td", null, x.gate ? badge("info", "gates") : badge("na", "informational")),
        h("td", { class: "num" }, x.fails ? h("a", { href: "#episodes/" + run.r + "?m=" + encodeURIComponent(x.name), class: "fail" }, int(x.fails)) : "0"),
        h("td", { class: "num" }, int(x.skipped) + (x.errors ? " (" + x.errors + " errors)" : "")));
    });
    main.appendChild(h("div", { class: "tablewrap" }, h("table", { class: "metrics-summary" },
      h("thead", null, h("tr", null, h("th", null, "metric"), h("th", null, "mean"),
        h("th", { class: "num", title: "t interval over cases (cases as clusters)" }, "95% interval"),
        h("th", null, "threshold"), h("th", null, "verdict"),
        h("th", { class: "num", title: "episodes whose score misses the threshold (or the metric raised)" }, "failing"),
        h("th", { class: "num", title: "null scores: the metric did not apply" }, "skipped"))),
      h("tbody", null, rows))));
    m.verdict_lines.forEach(function (line) { main.appendChild(h("p", { class: "muted small" }, line)); });
    if (m.review) main.appendChild(reviewBlock(m.review));

    var grid = h("div", { class: "grid2" });
    var reasons = Object.keys(run.reasons).sort(function (a, b) { return run.reasons[b] - run.reasons[a] || collator.compare(a, b); });
    if (reasons.length) {
      grid.appendChild(h("div", { id: "reasons" }, h("h2", null, "Why episodes fail"),
        h("p", { class: "muted small" }, "The first outcome check that failed, else each gating metric that failed (an episode can fail several)."),
        h("div", { class: "tablewrap" }, h("table", { class: "reasons" },
          h("thead", null, h("tr", null, h("th", null, "reason"), h("th", { class: "num" }, "episodes"))),
          h("tbody", null, reasons.map(function (k) {
            return h("tr", null, h("td", null, h("a", { href: "#episodes/" + run.r + "?r=" + encodeURIComponent(k) },
              reasonLabel(k))),
              h("td", { class: "num" }, int(run.reasons[k])));
          }))))));
    }
    var b = m.breakdowns;
    if (b.tag.length) grid.appendChild(h("div", { id: "by-tag" }, h("h2", null, "By tag"), breakdown(run, b.tag, "tag", m.tags)));
    if (b.difficulty.length) grid.appendChild(h("div", { id: "by-difficulty" }, h("h2", null, "By difficulty"), breakdown(run, b.difficulty, "diff", m.difficulties)));
    if (grid.firstChild) main.appendChild(grid);
    main.appendChild(h("h2", null, "Setup"));
    main.appendChild(setupTable(m.setup));
  }
  function reviewBlock(rv) {
    var box = h("div", { id: "review-figures" }, h("h2", null, "Review"),
      h("p", { class: "muted small" }, rv.line),
      rv.waiting ? h("p", { class: "note" }, rv.human_pending + " human-graded episode(s) pending review (not passed): " + rv.waiting) : null);
    if (rv.rows.length) box.appendChild(h("div", { class: "tablewrap" }, h("table", { class: "review-figures" },
      h("thead", null, h("tr", null, h("th", { title: "the reviewer's mark is the truth" }, "grader"),
        h("th", { class: "num", title: "reviewed results with a pass/fail" }, "reviewed"),
        h("th", { class: "num" }, "agreement"), h("th", { class: "num", title: "Cohen's kappa" }, "kappa"),
        h("th", { class: "num", title: "kappa ± 1.96 SE, clipped to [-1, 1]" }, "95% interval"),
        h("th", { class: "num" }, "TPR"), h("th", { class: "num" }, "TNR"),
        ["TP", "FN", "FP", "TN"].map(function (x) { return h("th", { class: "num" }, x); }))),
      h("tbody", null, rv.rows.map(function (r) {
        return h("tr", null, h("td", null, h("code", null, r.grader)), h("td", { class: "num" }, int(r.n)),
          h("td", { class: "num" }, r.agreement), h("td", { class: "num" }, r.kappa), h("td", { class: "num" }, r.ci),
          h("td", { class: "num" }, r.tpr), h("td", { class: "num" }, r.tnr),
          [r.tp, r.fn, r.fp, r.tn].map(function (x) { return h("td", { class: "num" }, int(x)); }));
      })))));
    return box;
  }
  function card(k, v, s, cls) {
    return h("div", { class: "card" + (cls ? " " + cls : "") }, h("div", { class: "k" }, k),
      h("div", { class: "v" }, v), h("div", { class: "s" }, s));
  }
  function kcard(s) {
    var ks = Object.keys(s.pass_at_k || {}).sort(function (a, b) { return a - b; });
    if (!ks.length) return card("trials", "1 per case", "pass@k and pass^k need several trials per case");
    return h("div", { class: "card wide" }, h("div", { class: "k", title: "pass@k: the chance that at least one of k trials passes; pass^k: that all k pass" }, "pass@k · pass^k"),
      h("table", { class: "small" }, h("tr", null, h("th", null, "k"), ks.map(function (k) { return h("th", { class: "num" }, k); })),
        h("tr", null, h("td", null, "pass@k"), ks.map(function (k) { return h("td", { class: "num" }, fmt(s.pass_at_k[k])); })),
        h("tr", null, h("td", null, "pass^k"), ks.map(function (k) { return h("td", { class: "num" }, fmt(s.pass_hat_k[k])); }))),
      h("div", { class: "s" }, "cases with k trials: " + ks.map(function (k) { return "k=" + k + " " + s.k_cases[k]; }).join(", ")));
  }
  function breakdown(run, rows, param, names) {
    return h("div", { class: "tablewrap" }, h("table", null,
      h("thead", null, h("tr", null, h("th", null, param === "tag" ? "tag" : "difficulty"), h("th", { class: "num" }, "cases"),
        h("th", { class: "num" }, "episodes"), h("th", null, "pass rate"), h("th", { class: "num" }, "95% interval"),
        rows.some(function (g) { return g.avg_composite !== null && g.avg_composite !== undefined; }) ? h("th", { class: "num" }, "composite mean") : null)),
      h("tbody", null, rows.map(function (g) {
        var ix = names.indexOf(g.name);
        return h("tr", null,
          h("td", null, ix >= 0 ? h("a", { href: "#episodes/" + run.r + "?" + param + "=" + ix }, g.name) : g.name),
          h("td", { class: "num" }, g.cases === null ? "" : int(g.cases)),
          h("td", { class: "num" }, int(g.passed) + " / " + int(g.episodes)),
          h("td", null, bar(g.pass_rate)),
          h("td", { class: "num" }, g.ci ? fmt(g.ci[0]) + " to " + fmt(g.ci[1]) : ""),
          g.avg_composite !== undefined && rows.some(function (x) { return x.avg_composite !== null && x.avg_composite !== undefined; })
            ? h("td", { class: "num" }, fmt(g.avg_composite)) : null);
      }))));
  }
  function setupTable(rows) {
    var sections = [];
    rows.forEach(function (row) {
      var last = sections[sections.length - 1];
      if (!last || last.name !== row[0]) sections.push(last = { name: row[0], rows: [] });
      last.rows.push(row);
    });
    return h("div", { class: "setup" }, sections.map(function (sec) {
      return h("div", { class: "panel" }, h("div", { class: "ph" }, sec.name),
        h("div", { class: "pb flush" }, h("table", { class: "kv" }, h("tbody", null, sec.rows.map(function (row) {
          var long = row[2].length > 240;
          var clip = h("div", { class: long ? "clip closed" : null }, row[2]);
          var cell = h("td", { class: "mono" }, clip);
          if (long) cell.appendChild(h("button", { type: "button", class: "btn more", onclick: function () {
            clip.classList.toggle("closed"); this.textContent = clip.classList.contains("closed") ? "show all" : "show less"; } }, "show all"));
          return h("tr", null, h("td", null, row[1]), cell);
        })))));
    }));
  }

  /* ------------------------------------------------------------------ episode list */
  var PAGE = 50;
  function filters(run, params) {
    var f = {
      q: (params.get("q") || "").trim().toLowerCase(), v: params.get("v") || "all",
      m: run.names.indexOf(params.get("m") || ""), tag: intOr(params.get("tag"), -1),
      diff: intOr(params.get("diff"), -1), r: params.get("r") || "",
      sort: params.get("s") || "order", dir: params.get("d") === "desc" ? -1 : 1,
      page: Math.max(0, intOr(params.get("p"), 0)), cols: params.get("cols"),
      rv: params.get("rv") || ""
    };
    return f;
  }
  function intOr(x, d) { var n = parseInt(x, 10); return isNaN(n) ? d : n; }
  function epMatches(run, i, f) {
    var e = run.eps[i], c = run.cases[e[C]];
    if (f.v === "fail" && e[V]) return false;
    if (f.v === "pass" && !e[V]) return false;
    if (f.m >= 0 && e[FL][f.m] !== "F" && e[FL][f.m] !== "E") return false;
    if (f.tag >= 0 && c[1].indexOf(f.tag) < 0) return false;
    if (f.diff >= 0 && c[2] !== f.diff) return false;
    if (f.r && reasonsOf(run, e).indexOf(f.r) < 0) return false;
    if (f.rv && !reviewMatches(run, i, f.rv)) return false;
    if (f.q) {
      var t = textOf(run, i);
      var hay = (c[0] + "\n" + (e[F] || "") + "\n" + (t ? (t[0] || "") + "\n" + (t[1] || "") : "")).toLowerCase();
      if (hay.indexOf(f.q) < 0) return false;
    }
    return true;
  }
  /* the list: matching episodes grouped by case, cases sorted; pure (no DOM) */
  function model(run, f) {
    var groups = [];
    run.cases.forEach(function (c, ci) {
      var first = c[3], n = c[4], hits = [], passed = 0;
      for (var i = first; i < first + n; i++) {
        if (run.eps[i][V]) passed++;
        if (epMatches(run, i, f)) hits.push(i);
      }
      if (!hits.length) return;
      if (f.v === "mixed" && (passed === 0 || passed === n)) return;
      groups.push({ c: ci, hits: hits, passed: passed, n: n });
    });
    var key = sortKey(run, f.sort);
    groups.forEach(function (g) { g.key = key(g); });
    groups.sort(function (a, b) {
      var x = a.key, y = b.key;
      if (x === y) return a.c - b.c;
      if (x === null) return 1;
      if (y === null) return -1;
      var d = typeof x === "string" ? collator.compare(x, y) : x - y;
      return d * f.dir || a.c - b.c;
    });
    var flat = [];
    groups.forEach(function (g) { g.hits.forEach(function (i) { flat.push(i); }); });
    return { groups: groups, flat: flat };
  }
  function mean(run, hits, get) {
    var s = 0, n = 0;
    hits.forEach(function (i) { var v = get(run.eps[i]); if (v !== null && v !== undefined) { s += v; n++; } });
    return n ? s / n : null;
  }
  function sortKey(run, s) {
    if (s === "case") return function (g) { return run.cases[g.c][0]; };
    if (s === "pass") return function (g) { return g.passed / g.n; };
    if (s === "fail") return function (g) { var e = run.eps[g.hits[0]]; return e[F] || ""; };
    if (s === "steps") return function (g) { return mean(run, g.hits, function (e) { return e[S]; }); };
    if (s === "tokens") return function (g) { return mean(run, g.hits, function (e) { return e[TI] === null && e[TO] === null ? null : (e[TI] || 0) + (e[TO] || 0); }); };
    if (s === "latency") return function (g) { return mean(run, g.hits, function (e) { return e[L]; }); };
    if (s === "cost") return function (g) { return mean(run, g.hits, function (e) { return e[K]; }); };
    if (s.slice(0, 2) === "m:") {
      var j = run.names.indexOf(s.slice(2));
      return function (g) { return mean(run, g.hits, function (e) { return e[SC][j]; }); };
    }
    return function (g) { return g.c; };
  }
  function shownMetrics(run, f) {
    if (f.cols !== null && f.cols !== undefined) {
      return f.cols === "" ? [] : f.cols.split(",").map(function (n) { return run.names.indexOf(n); }).filter(function (j) { return j >= 0; });
    }
    var all = run.names.map(function (n, j) { return j; });
    if (all.length <= 6) return all;
    var scored = all.filter(function (j) {
      var mm = run.m.metrics[j];
      return mm.gate && mm.mean !== null && mm.mean !== undefined;
    });
    return (scored.length ? scored : all).slice(0, 6);
  }
  function listHash(run, params) { var q = params.toString(); return "episodes/" + run.r + (q ? "?" + q : ""); }

  var listState = null;

  function renderList(main, run, params) {
    var f = filters(run, params);
    var search = h("input", { type: "search", id: "search", placeholder: "Search case ids, inputs, answers, failures  ( / )",
      "aria-label": "search", value: params.get("q") || "" });
    var timer = null;
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { set("q", search.value.trim()); }, 180);
    });
    function set(k, v) { var o = {}; o[k] = v; setMany(o); }
    function setMany(o) {
      var p = new URLSearchParams(params.toString());
      Object.keys(o).forEach(function (k) {
        var v = o[k];
        if (v === null || v === "" || v === undefined) p.delete(k); else p.set(k, v);
      });
      if (!("p" in o)) p.delete("p");
      params = p;
      history.replaceState(null, "", "#" + listHash(run, p));
      f = filters(run, p);
      table();
    }
    function select(name, labelText, opts, value) {
      return h("label", null, labelText + " ", h("select", { id: "f-" + name, "aria-label": labelText,
        onchange: function () { set(name, this.value); } }, opts.map(function (o) {
          return h("option", { value: o[0], selected: String(o[0]) === String(value) }, o[1]);
        })));
    }
    var reasonOpts = [["", "any"]].concat(Object.keys(run.reasons).sort().map(function (k) {
      return [k, reasonLabel(k)];
    }));
    var tools = h("div", { class: "toolbar" }, search,
      select("v", "verdict", [["all", "all"], ["fail", "failing"], ["pass", "passing"], ["mixed", "mixed (cases with passing and failing trials)"]], f.v),
      select("m", "failing metric", [["", "any"]].concat(run.names.map(function (n) { return [n, n]; })), params.get("m") || ""),
      select("r", "reason", reasonOpts, f.r),
      run.m.tags.length ? select("tag", "tag", [["", "any"]].concat(run.m.tags.map(function (t, j) { return [j, t]; })), params.get("tag") || "") : null,
      run.m.difficulties.length ? select("diff", "difficulty", [["", "any"]].concat(run.m.difficulties.map(function (t, j) { return [j, t]; })), params.get("diff") || "") : null,
      reviewable(run) ? select("rv", "review queue", [["", "any"], ["todo", "not reviewed yet"], ["disagree", "reviewer disagrees"],
        ["claims", "grounding claims to review"], ["human", "human-graded cases"]], f.rv) : null,
      columnPicker(run, function () { return f; }, function (v) { set("cols", v); }),
      h("button", { type: "button", id: "clear", onclick: function () { go("episodes/" + run.r); } }, "clear"));
    main.appendChild(tools);
    if (!run.m.has_traces) main.appendChild(h("p", { class: "note" }, run.m.note || "No traces: conversations and answers are not shown."));
    if (run.m.listed < run.m.episodes) main.appendChild(h("p", { class: "note" }, "This list holds the first " + int(run.m.listed) + " of " +
      int(run.m.episodes) + " episodes (dataset order, then trial); report.json lists every one."));
    var status = h("p", { class: "count", id: "count", "aria-live": "polite" });
    var holder = h("div", { id: "list" });
    main.appendChild(status);
    main.appendChild(holder);
    var sel = -1;
    listState = { run: run, rows: [], move: move, openSel: openSel, toggle: toggle, page: pageBy, search: search, params: function () { return params; } };

    function table() {
      if (f.q) {
        var p = allText(run, function (d, n) { status.textContent = "Loading search text " + d + " of " + n + "…"; });
        if (p) { p.then(function () { if (listState && listState.run === run) table(); }); return; }
      }
      var mdl = model(run, f);
      var cols = shownMetrics(run, f);
      var pages = Math.max(1, Math.ceil(mdl.groups.length / PAGE));
      var page = Math.min(f.page, pages - 1);
      var groups = mdl.groups.slice(page * PAGE, page * PAGE + PAGE);
      var need = [];
      groups.forEach(function (g) { need.push(run.cases[g.c][3]); g.hits.forEach(function (i) { need.push(i); }); });
      var pend = ensureText(run, need);
      if (pend) pend.then(function () { if (listState && listState.run === run) table(); });
      status.textContent = "";
      status.appendChild(document.createTextNode(mdl.groups.length
        ? "Cases " + int(page * PAGE + 1) + "–" + int(page * PAGE + groups.length) + " of " + int(mdl.groups.length) +
          " matching (" + int(mdl.flat.length) + " episodes); " + int(run.cases.length) + " cases, " + int(run.eps.length) + " episodes in all."
        : "No episode matches these filters (" + int(run.eps.length) + " episodes in all)."));
      clear(holder);
      var multi = run.m.trials > 1;
      var head = [["", null], ["case", "case"], multi ? ["trials", "pass"] : ["verdict", "pass"], ["failure", "fail"]];
      cols.forEach(function (j) { head.push([run.names[j], "m:" + run.names[j]]); });
      head.push(["steps", "steps"], ["tokens", "tokens"], ["latency", "latency"], ["answer", null]);
      var optCols = { steps: 1, tokens: 1, latency: 1 };
      var thead = h("tr", null, head.map(function (hd) {
        if (!hd[1]) return h("th", { class: hd[0] === "answer" ? "answer" : null }, hd[0]);
        var on = f.sort === hd[1];
        var isMetric = hd[1].slice(0, 2) === "m:";
        return h("th", { class: "sortable" + (["steps", "tokens", "latency", "pass"].indexOf(hd[1]) >= 0 || isMetric ? " num" : "") + (isMetric ? " metric" : "") + (hd[1] === "fail" ? " failure" : "") + (optCols[hd[1]] ? " opt" : ""),
          "aria-sort": on ? (f.dir > 0 ? "ascending" : "descending") : "none", title: "sort by " + hd[0],
          onclick: function () {
            // first click: ascending; second: descending; third: back to dataset order
            if (!on) setMany({ s: hd[1], d: null });
            else if (f.dir > 0) setMany({ s: hd[1], d: "desc" });
            else setMany({ s: null, d: null });
          } }, isMetric ? hd[0].replace(/_/g, "_\u200b") : hd[0], on ? h("span", { class: "arrow" }, f.dir > 0 ? " ▲" : " ▼") : null);
      }));
      var body = h("tbody");
      var rows = [];
      groups.forEach(function (g) {
        var c = run.cases[g.c];
        var single = !multi || (g.n === 1 && g.hits.length === 1);
        var openNow = !single && !!run.open[g.c];
        var tr = caseRow(run, g, c, cols, single, openNow);
        rows.push({ el: tr, kind: single ? "ep" : "case", c: g.c, i: g.hits[0] });
        body.appendChild(tr);
        if (openNow) g.hits.forEach(function (i) {
          var t = trialRow(run, i, cols);
          rows.push({ el: t, kind: "ep", c: g.c, i: i });
          body.appendChild(t);
        });
      });
      rows.forEach(function (row, n) {
        row.el.setAttribute("tabindex", "-1");
        row.el.addEventListener("click", function () { sel = n; activate(row); });
      });
      listState.rows = rows;
      listState.flat = mdl.flat;
      listState.pages = pages;
      listState.pageNo = page;
      holder.appendChild(h("div", { class: "tablewrap" }, h("table", { class: "list", id: "episodes" }, h("thead", null, thead), body)));
      holder.appendChild(h("div", { class: "pager" },
        h("button", { type: "button", disabled: page === 0, onclick: function () { pageBy(-1); } }, "‹ previous ( [ )"),
        h("span", { class: "muted" }, "page " + (page + 1) + " of " + pages),
        h("button", { type: "button", disabled: page >= pages - 1, onclick: function () { pageBy(1); } }, "next ( ] ) ›")));
      if (sel >= rows.length) sel = rows.length - 1;
      if (sel >= 0) highlight();
    }
    function highlight() {
      listState.rows.forEach(function (row, n) { row.el.classList.toggle("sel", n === sel); row.el.setAttribute("aria-selected", n === sel ? "true" : "false"); });
      var row = listState.rows[sel];
      if (row) { row.el.focus({ preventScroll: true }); row.el.scrollIntoView({ block: "nearest" }); }
    }
    function move(d) {
      if (!listState.rows.length) return;
      sel = Math.max(0, Math.min(listState.rows.length - 1, sel + d));
      highlight();
    }
    function activate(row) {
      if (row.kind === "case") toggle(row.c);
      else openEpisode(run, row.i, params);
    }
    function openSel() { var row = listState.rows[sel]; if (row) activate(row); }
    function toggle(c, state) {
      var want = state === undefined ? !run.open[c] : state;
      if (want) run.open[c] = true; else delete run.open[c];
      table();
    }
    function pageBy(d) {
      var next = (listState.pageNo || 0) + d;
      if (next < 0 || next >= listState.pages) return;
      sel = -1;
      set("p", next ? String(next) : null);
    }
    table();
  }
  function openEpisode(run, i, params) {
    var q = params ? params.toString() : "";
    go("episode/" + run.r + "/" + i + (q ? "?" + q : ""));
  }
  function scoreCell(run, j, score, flag, title) {
    var cls = "num" + (flag === "F" ? " fail" : flag === "E" ? " err" : score === null ? " na" : "");
    return h("td", { class: cls, title: title || null }, flag === "E" ? "error" : score === null ? "–" : fmt(score, 2));
  }
  function caseRow(run, g, c, cols, single, openNow) {
    var multi = !single;
    var t0 = textOf(run, c[3]);
    var first = run.eps[g.hits[0]];
    var cells = [h("td", { class: "tog" }, multi ? h("span", { class: "caret" }, openNow ? "▾" : "▸") : "")];
    cells.push(h("td", null, h("div", { class: "cid" }, c[0]),
      c[1].map(function (t) { return h("span", { class: "chip" }, run.m.tags[t]); }),
      c[2] >= 0 ? h("span", { class: "chip" }, run.m.difficulties[c[2]]) : null,
      t0 && t0[0] ? h("div", { class: "snip" }, t0[0]) : null,
      h("div", { class: "ans-inline" }, h("span", { class: "lbl" }, "answer"), answerSnip(run, first, textOf(run, g.hits[0])))));
    if (multi) {
      var dots = h("span", { class: "dots" });
      for (var i = c[3]; i < c[3] + c[4]; i++) {
        var e = run.eps[i];
        dots.appendChild(h("span", { class: "dot" + (e[V] ? " p" : "") + (g.hits.indexOf(i) < 0 ? " dim" : ""),
          title: "t" + e[T] + ": " + (e[V] ? "pass" : e[F]) }));
      }
      cells.push(h("td", { class: "num" }, dots, " ", g.passed + "/" + g.n));
      var fails = g.hits.filter(function (i) { return !run.eps[i][V]; }).map(function (i) { return run.eps[i][F]; });
      var top = mostCommon(fails);
      var same = fails.filter(function (x) { return x === top; }).length;
      cells.push(h("td", { class: "failure" }, top ? (same > 1 ? same + "× " : "") + cut(top, 160) +
        (fails.length > same ? " (+" + (fails.length - same) + " other)" : "") : ""));
      cols.forEach(function (j) {
        var vals = g.hits.map(function (i) { return run.eps[i][SC][j]; });
        var mm = mean(run, g.hits, function (e) { return e[SC][j]; });
        var flagsHere = g.hits.map(function (i) { return run.eps[i][FL][j]; });
        var bad = flagsHere.indexOf("F") >= 0 ? "F" : flagsHere.indexOf("E") >= 0 ? "E" : "-";
        cells.push(scoreCell(run, j, mm, bad === "-" ? (mm === null ? "-" : "P") : bad,
          run.names[j] + ": " + vals.map(function (v, n) { return "t" + run.eps[g.hits[n]][T] + " " + fmt(v, 2); }).join(", ")));
      });
      cells.push(h("td", { class: "num opt" }, num1(mean(run, g.hits, function (e) { return e[S]; }))));
      cells.push(h("td", { class: "num opt" }, tok(mean(run, g.hits, function (e) { return e[TI]; }), mean(run, g.hits, function (e) { return e[TO]; }))));
      cells.push(h("td", { class: "num opt" }, secs(mean(run, g.hits, function (e) { return e[L]; }))));
    } else {
      cells.push(h("td", null, first[V] ? badge("pass", "PASS") : badge("fail", "FAIL")));
      cells.push(h("td", { class: "failure" }, first[F] ? cut(first[F], 200) : ""));
      cols.forEach(function (j) { cells.push(scoreCell(run, j, first[SC][j], first[FL][j], run.names[j])); });
      cells.push(h("td", { class: "num opt" }, first[S]));
      cells.push(h("td", { class: "num opt" }, tok(first[TI], first[TO])));
      cells.push(h("td", { class: "num opt" }, secs(first[L])));
    }
    var ta = textOf(run, g.hits[0]);
    cells.push(h("td", { class: "answer" }, answerSnip(run, first, ta)));
    return h("tr", { class: "case" + (single ? " ep" : ""), "data-case": c[0], "data-i": single ? g.hits[0] : null,
      "aria-expanded": multi ? String(openNow) : null }, cells);
  }
  function trialRow(run, i, cols) {
    var e = run.eps[i];
    var cells = [h("td", { class: "tog" }, ""),
      h("td", null, "trial " + e[T], h("div", { class: "ans-inline" }, h("span", { class: "lbl" }, "answer"), answerSnip(run, e, textOf(run, i)))),
      h("td", null, e[V] ? badge("pass", "PASS") : badge("fail", "FAIL")),
      h("td", { class: "failure" }, e[F] ? cut(e[F], 200) : "")];
    cols.forEach(function (j) { cells.push(scoreCell(run, j, e[SC][j], e[FL][j], run.names[j])); });
    cells.push(h("td", { class: "num opt" }, e[S]), h("td", { class: "num opt" }, tok(e[TI], e[TO])), h("td", { class: "num opt" }, secs(e[L])),
      h("td", { class: "answer" }, answerSnip(run, e, textOf(run, i))));
    return h("tr", { class: "trial", "data-i": i }, cells);
  }
  function answerSnip(run, e, t) {
    if (!run.m.has_traces) return h("span", { class: "muted" }, "");
    if (!t) return h("span", { class: "muted" }, "…");
    if (t[1] === null) return h("span", { class: "muted" }, "(no final answer)");
    return h("div", { class: "snip" }, t[1]);
  }
  function tok(a, b) {
    if ((a === null || a === undefined) && (b === null || b === undefined)) return "n/a";
    return int(Math.round(a || 0)) + " / " + int(Math.round(b || 0));
  }
  function mostCommon(list) {
    var best = null, n = 0, counts = {};
    list.forEach(function (x) { counts[x] = (counts[x] || 0) + 1; if (counts[x] > n) { n = counts[x]; best = x; } });
    return best;
  }
  function columnPicker(run, getF, setCols) {
    var menu = h("div", { class: "menu" });
    var det = h("details", { class: "colpick" }, h("summary", null, "columns ▾"), menu);
    det.addEventListener("toggle", function () {
      if (!det.open) return;
      clear(menu);
      var shown = shownMetrics(run, getF());
      menu.appendChild(h("div", { class: "muted small" }, "metric columns"));
      run.names.forEach(function (n, j) {
        var box = h("input", { type: "checkbox", checked: shown.indexOf(j) >= 0 });
        box.addEventListener("change", function () {
          var now = shownMetrics(run, getF());
          if (box.checked) now.push(j); else now = now.filter(function (x) { return x !== j; });
          now.sort(function (a, b) { return a - b; });
          setCols(now.map(function (x) { return run.names[x]; }).join(","));
        });
        menu.appendChild(h("label", null, box, " ", n));
      });
    });
    return det;
  }

  /* ------------------------------------------------------------------ one episode */
  function renderEpisode(main, run, route) {
    // a search in the list's address needs every answer to find this episode's neighbours
    var pending = route.params.get("q") ? allText(run) : null;
    if (pending) {
      main.appendChild(h("p", { class: "loading" }, "Loading…"));
      pending.then(function () { if (current.main === main) { clear(main); renderEpisode(main, run, route); } });
      return;
    }
    var i = route.i, e = run.eps[i], c = run.cases[e[C]];
    var params = route.params;
    var listQ = params.toString();
    var mdl = model(run, filters(run, params));
    var pos = mdl.flat.indexOf(i);
    var prev = pos > 0 ? mdl.flat[pos - 1] : null, next = pos >= 0 && pos < mdl.flat.length - 1 ? mdl.flat[pos + 1] : null;
    current.nav = { prev: prev, next: next, back: "episodes/" + run.r + (listQ ? "?" + listQ : ""), run: run, params: params };
    var other = otherRun(run);
    var head = h("div", { class: "ephead" },
      h("a", { href: "#" + current.nav.back, class: "btn", id: "back", title: "back to the list (Esc)" }, "← episodes"),
      h("h1", null, c[0], run.m.trials > 1 ? h("span", { class: "muted" }, " #t" + e[T]) : null),
      e[V] ? badge("pass", "PASS") : badge("fail", "FAIL"),
      e[F] ? h("span", { class: "fail" }, cut(e[F], 300)) : null,
      h("span", { class: "spacer" }),
      h("a", { class: "btn", id: "permalink", href: "#case/" + run.r + "/" + encodeURIComponent(c[0]) + "/" + e[T],
               title: "a link to this episode by its case and trial: it stays valid when the run is graded again" }, "link"),
      other ? h("a", { class: "btn", id: "other", href: "#", onclick: function (ev) {
        ev.preventDefault();
        loadRun(other).then(function () {
          var j = keyIndex(other)[c[0] + "\u0000" + e[T]];
          if (j === undefined) ev.target.textContent = "not in " + (other.r === 0 ? "the baseline" : "the current run");
          else go("episode/" + other.r + "/" + j);
        });
      } }, "same episode in " + (other.r === 0 ? "the baseline" : "the current run")) : null,
      h("button", { type: "button", class: "btn", id: "prev", disabled: prev === null, title: "previous (k)",
        onclick: function () { openEpisode(run, prev, params); } }, "‹ previous"),
      h("span", { class: "muted small" }, pos >= 0 ? (pos + 1) + " of " + mdl.flat.length : ""),
      h("button", { type: "button", class: "btn", id: "next", disabled: next === null, title: "next (j)",
        onclick: function () { openEpisode(run, next, params); } }, "next ›"));
    main.appendChild(head);
    main.appendChild(h("div", { class: "facts" },
      c[1].map(function (t) { return h("span", { class: "chip" }, run.m.tags[t]); }),
      c[2] >= 0 ? h("span", { class: "chip" }, "difficulty " + run.m.difficulties[c[2]]) : null,
      "steps " + e[S] + " · tokens " + tok(e[TI], e[TO]) + " (in / out) · latency " + secs(e[L]) +
      (e[K] !== null ? " · cost " + usd(e[K]) : "")));
    main.appendChild(reviewBar(run, i));
    var body = h("div", { id: "detail" }, h("p", { class: "loading" }, "Loading the episode…"));
    main.appendChild(body);
    detail(run, i).then(function (d) {
      if (current.main !== main) return;
      clear(body);
      episodeBody(body, run, i, d);
      reviewItems(run, i, d);
      if (other) compareEpisode(body, run, other, c[0], e[T], d);
    }).catch(function (err) { clear(body); body.appendChild(h("p", { class: "note" }, "Cannot load this episode: " + err.message)); });
  }
  function otherRun(run) { return RUNS.length === 2 ? RUNS[1 - run.r] : null; }
  function panel(title, content, id) {
    return h("section", { class: "panel", id: id || null }, h("div", { class: "ph" }, title), h("div", { class: "pb" }, content));
  }
  function episodeBody(body, run, i, d) {
    var tr = d.trace;
    if (tr) {
      var facts = [["stop reason", tr.stop_reason], ["model turns", tr.steps], ["model", tr.model],
        ["trace", "traces.jsonl line " + tr.line + ", digest " + tr.digest]];
      if (tr.digest_graded && tr.digest_graded !== tr.digest) facts.push(["note", "the report graded another recording (digest " + tr.digest_graded + ")"]);
      body.appendChild(h("p", { class: "facts" }, facts.filter(function (f) { return f[1] !== null && f[1] !== undefined; })
        .map(function (f, n) { return h("span", null, n ? " · " : "", f[0] + ": ", h("span", { class: "mono" }, f[1])); })));
      if (d.conversation) {
        var cv = d.conversation;
        body.appendChild(h("p", { class: "facts" }, "conversation ended: ", h("b", { class: "mono" }, cv.end),
          " · user: " + cv.user + " · user messages: " + cv.user_turns,
          cv.user_retries ? " · replies retried for speaking as the agent: " + cv.user_retries : "",
          cv.out_of_role ? " · last reply: " + cv.out_of_role : ""));
      }
      if (tr.infra_error) body.appendChild(h("p", { class: "note" }, "The infrastructure ended this episode: " + tr.infra_error));
      if (tr.error) body.appendChild(panel("Error", pre(tr.error)));
      if (tr.unfinished) body.appendChild(h("p", { class: "note" }, "The last turn was not finished: its calls were not run, and there is no final answer."));
    } else {
      body.appendChild(h("p", { class: "note" }, run.m.note || "This run's traces are not available: only the scores are shown."));
    }
    if (d.pairs && d.pairs.length || d.expected) body.appendChild(pairsPanel(d));
    var two = h("div", { class: "two" });
    var left = h("div", null), right = h("div", null);
    two.appendChild(left); two.appendChild(right);
    body.appendChild(two);
    if (tr) left.appendChild(conversationPanel(d));
    right.appendChild(metricsPanel(run, d));
    if (d.end_state) right.appendChild(endStatePanel(d.end_state));
    if (d.expect && d.expect.length) right.appendChild(panel("What the case expects", h("table", { class: "kv" },
      d.expect.map(function (x) { return h("tr", null, h("td", null, x[0]), h("td", null, x[1])); }))));
    if (d.judge && d.judge.length) right.appendChild(judgePanel(d.judge));
    if (tr && tr.partial) left.appendChild(panel("Partial answer (the stream broke off)", pre(tr.partial)));
  }
  function answerWithClaims(answer, claims, review) {
    var el = h("pre", { class: "t plain" });
    var at = 0;
    var marks = (claims || []).map(function (cl, n) { return [cl, "claim", String(n + 1)]; })
      .concat((review || []).map(function (cl, n) { return [cl, "claim review", "r" + (n + 1)]; }))
      .sort(function (a, b) { return a[0][0] - b[0][0]; });
    marks.forEach(function (mk) {
      var cl = mk[0];
      if (cl[0] < at) return;
      el.appendChild(document.createTextNode(answer.slice(at, cl[0])));
      el.appendChild(h("mark", { class: mk[1], title: cl[2] + ": " + cl[3] }, answer.slice(cl[0], cl[1]), h("sup", null, mk[2])));
      at = cl[1];
    });
    el.appendChild(document.createTextNode(answer.slice(at)));
    var box = h("div", null, el);
    if (claims && claims.length) box.appendChild(h("div", { class: "small" }, h("b", { class: "fail" }, "Unsupported claims (grounding):"),
      h("ol", { class: "claims" }, claims.map(function (cl) { return h("li", null, cl[2] + " '" + answer.slice(cl[0], cl[1]) + "': " + cl[3]); }))));
    if (review && review.length) box.appendChild(h("div", { class: "small" }, h("b", null, "To review, not counted (grounding):"),
      h("ol", { class: "claims review" }, review.map(function (cl) { return h("li", null, cl[2] + " '" + answer.slice(cl[0], cl[1]) + "': " + cl[3]); }))));
    return box;
  }
  function conversationPanel(d) {
    var box = h("div", { class: "convo" });
    var finalShown = false;
    d.turns.forEach(function (t, ti) {
      var who = t.who || t.role;
      var turn = h("div", { class: "turn " + t.role + (who === "tool results" ? " tool" : "") }, h("div", { class: "who" }, (ti + 1) + ". " + who));
      t.blocks.forEach(function (b, bi) {
        var isFinal = d.final && d.final[0] === ti && d.final[1] === bi;
        if (isFinal) finalShown = true;
        turn.appendChild(block(b, isFinal ? d : null));
      });
      box.appendChild(turn);
    });
    if (d.turns_left) box.appendChild(h("p", { class: "muted" }, "… " + d.turns_left + " more message(s) not shown (traces.jsonl has them)."));
    if (d.answer !== null && d.answer !== undefined && !finalShown) {
      box.appendChild(h("div", { class: "turn assistant final" }, h("div", { class: "who" }, "final answer"), answerWithClaims(d.answer, d.claims, d.review)));
    }
    if (d.answer === null || d.answer === undefined) box.appendChild(h("p", { class: "muted" }, "No final answer (stop reason: " + d.trace.stop_reason + ")."));
    return panel("Conversation (" + d.turns.length + " messages, " + d.calls.length + " tool calls)", box, "conversation");
  }
  function block(b, finalOf) {
    if (b.k === "text") {
      if (finalOf) return h("div", { class: "block final" }, h("div", { class: "lbl" }, "final answer"), answerWithClaims(finalOf.answer, finalOf.claims, finalOf.review));
      return h("div", { class: "block" }, pre(b.text, true));
    }
    if (b.k === "call") return h("div", { class: "block call" }, h("div", { class: "lbl" }, "tool call ", h("b", null, b.name), " ", h("span", { class: "muted" }, b.id)), pre(b.args),
      b.changes && b.changes.length ? h("div", { class: "changes" }, h("div", { class: "lbl" }, "state changes"),
        b.changes.map(function (c) { return h("div", { class: "arg mono" }, c[0] + ": " + c[1] + " → " + c[2]); })) : null);
    if (b.k === "result") return h("div", { class: "block result" + (b.error ? " error" : "") },
      h("div", { class: "lbl" }, b.error ? h("b", { class: "fail" }, "tool error ") : "tool result ", b.name ? h("b", null, b.name) : null, " ", h("span", { class: "muted" }, b.id)), pre(b.text));
    if (b.k === "thinking") return h("div", { class: "block" }, h("div", { class: "lbl" }, "thinking"), pre(b.text));
    if (b.k === "note") return h("div", { class: "block muted" }, b.text);
    return h("div", { class: "block" }, h("div", { class: "lbl" }, "block " + (b.type || "")), pre(b.text));
  }
  function endStatePanel(es) {
    var box = h("div", null);
    if (es.unchanged) box.appendChild(h("p", null, "No change: the end state must equal the initial state."));
    if (es.expected_state) box.appendChild(h("div", null, h("div", { class: "lbl" }, "expected_state (laid over the initial state; every other path must keep its value)"), pre(es.expected_state)));
    if (es.gold && es.gold.length) box.appendChild(h("div", null, h("div", { class: "lbl" }, "gold actions (applied to the initial state)"),
      h("ol", null, es.gold.map(function (g) { return h("li", { class: "mono" }, g); }))));
    return panel("Expected end state", box, "endstate");
  }
  function pairsPanel(d) {
    var rows = (d.pairs || []).map(function (p, n) {
      var ex = p.e === null ? null : d.expected[p.e];
      var ac = p.a === null ? null : d.calls[p.a];
      var st = { match: badge("pass", "match"), differs: badge("fail", "differs"), missing: badge("fail", "not called"), extra: d.end_state ? badge("na", d.end_state.gold.length ? "not a gold action" : "no call expected") : badge("warn", "not expected") }[p.status];
      var left = ex ? h("div", null, h("b", null, ex.name), ex.args === null ? h("span", { class: "muted" }, " (any arguments)") : null) : h("span", { class: "muted" }, "—");
      var right = ac ? h("div", null, h("b", null, ac.name), h("span", { class: "muted" }, " call " + (p.a + 1) + ", step " + ac.step + (ac.error ? ", error" : ""))) : h("span", { class: "muted" }, "—");
      var lArgs = h("div"), rArgs = h("div");
      p.args.forEach(function (a) {
        var name = a[0], evs = a[1], av = a[2], state = a[3];
        var note = { diff: "differs", case: "differs in letter case only", missing: "missing", optional: "optional, absent", extra: "not expected" }[state] || "";
        if (ex) lArgs.appendChild(h("div", { class: "arg " + (state === "missing" || state === "diff" ? "diff" : state === "case" ? "case" : "") },
          name + ": ", evs ? evs.join(" | ") : h("span", { class: "st" }, state === "any" ? "any" : "—")));
        if (ac) rArgs.appendChild(h("div", { class: "arg " + state }, name + ": ", av === null ? h("span", { class: "st" }, "—") : av,
          note ? h("span", { class: "st" }, "  ← " + note) : null));
      });
      left.appendChild(lArgs); right.appendChild(rArgs);
      return h("tr", { class: "pair " + p.status }, h("td", { class: "num" }, n + 1), h("td", { class: "side" }, left), h("td", { class: "side" }, right), h("td", null, st));
    });
    if (!rows.length) rows = [h("tr", null, h("td", { colspan: 4, class: "muted" }, d.expected && !d.expected.length ? "No call expected, and none made." : "No call expected."))];
    return h("section", { class: "panel", id: "pairs" }, h("div", { class: "ph" }, d.end_state && d.end_state.gold.length ? "Gold actions vs actual calls" : "Expected vs actual calls"),
      h("div", { class: "pb flush tablewrap" }, h("table", { class: "pairs" },
        h("thead", null, h("tr", null, h("th", { class: "num" }, "#"), h("th", null, "expected"), h("th", null, "actual"), h("th", null, ""))),
        h("tbody", null, rows))));
  }
  function metricsPanel(run, d) {
    var lower = {}, gates = {};
    run.m.metrics.forEach(function (m) { lower[m.name] = m.lower; gates[m.name] = m.gate; });
    var shown = [], skipped = [];
    d.metrics.forEach(function (m) { (m[1] === null && m[4] !== "error" && !/^judge_/.test(m[4] || "") ? skipped : shown).push(m); });
    function row(m, skip) {
      var res = m[1] === null ? (m[4] === "error" ? badge("fail", "ERROR") : badge("na", "N/A")) : m[3] === true ? badge("pass", "PASS") : m[3] === false ? (gates[m[0]] ? badge("fail", "FAIL") : badge("warn", "FAIL (informational)")) : badge("na", "—");
      return h("tr", { class: skip ? "skip" : null },
        h("td", null, h("b", null, m[0]), gates[m[0]] ? null : h("span", { class: "muted" }, " (info)")),
        h("td", { class: "num" }, m[1] === null ? (m[4] || "null") : fmt(m[1], 3)),
        h("td", { class: "num" }, m[2] === null ? "" : (lower[m[0]] ? "≤ " : "≥ ") + fmt(m[2], 2)),
        h("td", null, res),
        h("td", { class: "det" }, m[5]));
    }
    var tbody = h("tbody", null, shown.map(function (m) { return row(m, false); }));
    var box = h("div", { class: "tablewrap" }, h("table", { class: "metrics" },
      h("thead", null, h("tr", null, h("th", null, "metric"), h("th", { class: "num" }, "score"), h("th", { class: "num" }, "threshold"), h("th", null, ""), h("th", null, "details and evidence"))),
      tbody));
    if (skipped.length) {
      var more = h("button", { type: "button", class: "btn more" }, "show " + skipped.length + " not applicable");
      more.addEventListener("click", function () { skipped.forEach(function (m) { tbody.appendChild(row(m, true)); }); more.remove(); });
      box.appendChild(more);
    }
    return h("section", { class: "panel", id: "metrics" }, h("div", { class: "ph" }, "Metrics"), h("div", { class: "pb flush" }, box));
  }
  function judgePanel(items) {
    return panel("Recorded judge answers (" + items.length + ")", items.map(function (j, n) {
      var head = (j.prompt || "").split("\n")[0];
      return h("details", { class: "judge" }, h("summary", null, (n + 1) + ". " + cut(head, 120) + (j.status && j.status !== 200 ? " (HTTP " + j.status + ")" : "")),
        h("div", { class: "lbl small muted" }, "answer" + (j.model ? " by " + j.model : "") + (j.stop_reason ? ", stop " + j.stop_reason : "")),
        pre(j.answer), h("div", { class: "lbl small muted" }, "prompt"), pre(j.prompt), j.system ? pre("system: " + j.system) : null);
    }), "judge");
  }
  function compareEpisode(body, run, other, cid, trial, d) {
    loadRun(other).then(function () {
      var j = keyIndex(other)[cid + "\u0000" + trial];
      if (j === undefined) { body.appendChild(h("p", { class: "muted" }, "This episode is not in " + other.m.label + ".")); return; }
      var e = other.eps[j];
      var mine = {};
      d.metrics.forEach(function (m) { mine[m[0]] = m; });
      var rows = other.names.map(function (n, k) {
        var a = mine[n], bscore = e[SC][k];
        var ascore = a ? a[1] : null;
        var changed = (ascore === null) !== (bscore === null) || (ascore !== null && Math.abs(ascore - bscore) > 1e-9);
        if (!changed) return null;
        return h("tr", null, h("td", null, n), h("td", { class: "num" }, fmt(bscore, 3)), h("td", { class: "num" }, fmt(ascore, 3)));
      }).filter(Boolean);
      var cur = run.eps[current.route.i];
      body.appendChild(panel("Compared with " + (other.r === 0 ? "the baseline" : "the current run") + " (" + other.m.label + ")", h("div", null,
        h("p", null, "there: ", e[V] ? badge("pass", "PASS") : badge("fail", "FAIL"), " ", e[F] || "",
          " → here: ", cur[V] ? badge("pass", "PASS") : badge("fail", "FAIL"), " ", cur[F] || ""),
        rows.length ? h("table", { class: "small" }, h("thead", null, h("tr", null, h("th", null, "metric"), h("th", { class: "num" }, "there"), h("th", { class: "num" }, "here"))), h("tbody", null, rows))
          : h("p", { class: "muted" }, "Every metric has the same score."),
        h("a", { href: "#episode/" + other.r + "/" + j }, "open it there")), "vsother"));
    });
  }

  /* ------------------------------------------------------------------ compare */
  function renderCompare(main) {
    main.appendChild(h("p", { class: "loading" }, "Loading the comparison…"));
    Promise.all([load(META.compare), loadRun(RUNS[0]), loadRun(RUNS[1])]).then(function (parts) {
      if (current.main !== main) return;
      clear(main);
      compareBody(main, parts[0]);
    }).catch(function (err) { clear(main); main.appendChild(h("p", { class: "note" }, "Cannot load the comparison: " + err.message)); });
  }
  function compareBody(main, cmp) {
    var lv = { ok: badge("pass", "OK"), warning: badge("warn", "WARNING"), critical: badge("fail", "CRITICAL") }[cmp.level];
    main.appendChild(h("h1", null, cmp.labels[0], h("span", { class: "muted" }, "  →  "), cmp.labels[1], " ", lv));
    main.appendChild(h("p", { class: "muted" }, "baseline ", h("b", null, cmp.labels[0]), ", current ", h("b", null, cmp.labels[1]),
      "; " + int(cmp.shared) + " episodes in both (" + int(cmp.regraded) + " graded from the same recording, " + int(cmp.rerecorded) + " re-recorded)."));
    if (cmp.unrelated) main.appendChild(h("p", { class: "note" }, "These may not be two gradings of one dataset: " + cmp.unrelated));
    main.appendChild(h("div", { class: "panel" }, h("div", { class: "ph" }, "The baseline gate (evaltape diff's rules)"),
      h("div", { class: "pb" }, cmp.gate.map(function (g) { return h("div", { class: /FAIL/.test(g) ? "fail" : null }, g); }),
        cmp.warnings.length ? h("div", { class: "warn" }, "warnings: ", cmp.warnings.join("; ")) : null)));

    main.appendChild(h("h2", null, "Metric means"));
    main.appendChild(h("div", { class: "tablewrap" }, h("table", { id: "deltas" },
      h("thead", null, h("tr", null, h("th", null, "metric"), h("th", { class: "num" }, "baseline"), h("th", { class: "num" }, "current"),
        h("th", { class: "num" }, "change"), h("th", { class: "num", title: "t interval over the cases both runs have, paired by case" }, "95% interval of the change"),
        h("th", null, "alert"))),
      h("tbody", null, cmp.metrics.filter(function (m) { return m.graded[0] || m.graded[1]; }).map(function (m) {
        var worse = m.delta !== null && (m.lower ? m.delta > 0 : m.delta < 0);
        var sig = m.ci && (m.ci[0] > 0 || m.ci[1] < 0);
        return h("tr", null, h("td", null, m.name, m.lower ? h("span", { class: "muted" }, " (lower is better)") : null),
          h("td", { class: "num" }, m.graded[0] ? fmt(m.before) : "not graded"), h("td", { class: "num" }, m.graded[1] ? fmt(m.after) : "not graded"),
          h("td", { class: "num " + (m.delta ? (worse ? "fail" : "pass") : "") }, m.delta === null ? "n/a" : (m.delta > 0 ? "+" : "") + fmt(m.delta)),
          h("td", { class: "num" }, m.ci ? "[" + fmt(m.ci[0]) + ", " + fmt(m.ci[1]) + "]" + (sig ? " *" : "") : "n/a"),
          h("td", null, m.level === "critical" ? badge("fail", "critical") : m.level === "warning" ? badge("warn", "warning") : m.level === "improved" ? badge("pass", "improved") : ""));
      })))));
    main.appendChild(h("p", { class: "muted small" }, "Intervals over the " + int(cmp.shared) + " shared episodes, cases as clusters (Student's t); * marks a change whose interval leaves out 0. pass_rate is the share of passing verdicts."));

    main.appendChild(h("h2", null, "Flipped episodes (" + int(cmp.flips_total) + ": " + cmp.regressed + " pass → fail, " + cmp.fixed + " fail → pass; McNemar p = " + fmt(cmp.mcnemar_p, 4) + ")"));
    if (cmp.flips.length) {
      main.appendChild(h("div", { class: "tablewrap" }, h("table", { id: "flips", class: "list" },
        h("thead", null, h("tr", null, h("th", null, "episode"), h("th", null, "change"), h("th", null, "baseline"), h("th", null, "current"), h("th", null, "recording"))),
        h("tbody", null, cmp.flips.map(function (f) {
          var tr = h("tr", { tabindex: "-1", "data-case": f[0] },
            h("td", null, h("b", null, f[0] + "#t" + f[1])),
            h("td", null, f[2] ? badge("fail", "pass → fail") : badge("pass", "fail → pass")),
            h("td", { class: "failure" }, f[7] >= 0 ? h("a", { href: "#episode/0/" + f[7] }, f[4] || "pass") : (f[4] || "pass")),
            h("td", { class: "failure" }, f[8] >= 0 ? h("a", { href: "#episode/1/" + f[8] }, f[5] || "pass") : (f[5] || "pass")),
            h("td", null, f[6] ? "same recording" : "new recording"));
          return tr;
        })))));
    } else main.appendChild(h("p", { class: "muted" }, "No episode changed verdict."));

    main.appendChild(h("h2", null, "Cases: passing trials before and after"));
    var onlyChanged = h("input", { type: "checkbox", id: "changed-only", checked: cmp.cases.length > 30 });
    var holder = h("div");
    main.appendChild(h("label", { class: "small" }, onlyChanged, " only cases whose pass count changed"));
    function casesTable() {
      clear(holder);
      var rows = cmp.cases.filter(function (c) { return !onlyChanged.checked || c[1] === null || c[3] === null || c[1] * c[4] !== c[3] * c[2]; });
      holder.appendChild(h("div", { class: "tablewrap" }, h("table", { id: "case-counts" },
        h("thead", null, h("tr", null, h("th", null, "case"), h("th", { class: "num" }, "baseline"), h("th", { class: "num" }, "current"), h("th", { class: "num" }, "change"),
          h("th", { class: "num" }, "Fisher p (one-sided)"), h("th", null, "alert"))),
        h("tbody", null, rows.slice(0, 2000).map(function (c) {
          var before = c[1] === null ? "—" : c[1] + "/" + c[2], after = c[3] === null ? "—" : c[3] + "/" + c[4];
          var d = c[1] === null || c[3] === null ? null : c[3] / c[4] - c[1] / c[2];
          return h("tr", null, h("td", null, c[8] >= 0 ? h("a", { href: "#episodes/1?q=" + encodeURIComponent(c[0]) }, c[0]) : c[0]),
            h("td", { class: "num" }, before), h("td", { class: "num" }, after),
            h("td", { class: "num " + (d === null ? "" : d < 0 ? "fail" : d > 0 ? "pass" : "") }, d === null ? (c[1] === null ? "only current" : "only baseline") : d === 0 ? "same" : (d > 0 ? "+" : "") + (100 * d).toFixed(0) + " pts"),
            h("td", { class: "num" }, c[5] === null ? "" : fmt(c[5], 4)),
            h("td", null, c[6] === "critical" ? badge("fail", "critical") : c[6] === "warning" ? badge("warn", "warning") : ""));
        })))));
      if (rows.length > 2000) holder.appendChild(h("p", { class: "muted" }, "The first 2,000 of " + int(rows.length) + " cases are listed."));
      if (!rows.length) holder.appendChild(h("p", { class: "muted" }, "No case's pass count changed."));
    }
    onlyChanged.addEventListener("change", casesTable);
    main.appendChild(holder);
    casesTable();
    if (cmp.cases_total > cmp.cases.length) main.appendChild(h("p", { class: "muted" }, int(cmp.cases_total) + " cases in all; the first " + int(cmp.cases.length) + " are listed."));

    main.appendChild(h("h2", null, "Only in one run"));
    var two = h("div", { class: "two" });
    [0, 1].forEach(function (side) {
      var who = side === 0 ? "Only in the baseline" : "Only in the current run";
      two.appendChild(h("div", { id: side === 0 ? "only-baseline" : "only-current" },
        h("h3", null, who + ": " + int(cmp.cases_only_total[side]) + " case(s), " + int(cmp.episodes_only_total[side]) + " episode(s)"),
        cmp.cases_only[side].length ? h("p", null, h("b", null, "cases: "), cmp.cases_only[side].join(", ")) : h("p", { class: "muted" }, "no case"),
        cmp.episodes_only[side].length ? h("p", { class: "small" }, h("b", null, "episodes: "), cmp.episodes_only[side].slice(0, 500).join(", ") + (cmp.episodes_only[side].length > 500 ? ", …" : "")) : null));
    });
    main.appendChild(two);

    main.appendChild(h("h2", null, "Setup differences"));
    if (cmp.changes.length) main.appendChild(h("ul", { id: "changes" }, cmp.changes.map(function (c) { return h("li", null, c[1]); })));
    var diffOnly = h("input", { type: "checkbox", id: "setup-diff-only", checked: true });
    var setupHolder = h("div");
    main.appendChild(h("label", { class: "small" }, diffOnly, " only what differs"));
    function setup() {
      clear(setupHolder);
      var rows = cmp.setup.filter(function (r) { return !diffOnly.checked || r[4]; });
      setupHolder.appendChild(rows.length ? h("div", { class: "tablewrap" }, h("table", { class: "kv", id: "setup-diff" },
        h("thead", null, h("tr", null, h("th", null, ""), h("th", null, "baseline"), h("th", null, "current"))),
        h("tbody", null, rows.map(function (r) {
          return h("tr", { class: r[4] ? "changed" : null }, h("td", null, r[0] + ": " + r[1]),
            h("td", { class: "mono" + (r[4] ? " was" : "") }, r[2] === null ? "—" : r[2]),
            h("td", { class: "mono" + (r[4] ? " now" : "") }, r[3] === null ? "—" : r[3]));
        })))) : h("p", { class: "muted" }, "The two runs' setups are the same."));
    }
    diffOnly.addEventListener("change", setup);
    main.appendChild(setupHolder);
    setup();
  }

  /* ------------------------------------------------------------------ keyboard */
  function help() {
    var old = document.getElementById("help");
    if (old) { old.remove(); return; }
    var keys = [["/", "search the episodes"], ["j / ↓", "next row (the next episode when one is open)"], ["k / ↑", "previous row (episode)"],
      ["Enter / o", "open the episode, or show a case's trials"], ["→ / ←", "show / hide a case's trials"],
      ["[ / ]", "previous / next page"], ["Esc", "back to the list; leave the search box"], ["1 2 3", "overview, episodes, compare"], ["?", "this help"]];
    if (REVIEW) keys = keys.concat([["p", "review: mark the open episode pass"], ["f", "review: mark the open episode fail"],
      ["n", "review: write a note on the open episode (Enter saves)"]]);
    var box = h("div", { class: "overlay", id: "help", onclick: function (ev) { if (ev.target === box) box.remove(); } },
      h("div", { class: "box", role: "dialog", "aria-label": "keyboard" }, h("h2", null, "Keyboard"),
        h("table", { class: "keys" }, keys.map(function (k) { return h("tr", null, h("td", null, h("kbd", null, k[0])), h("td", null, k[1])); })),
        REVIEW ? null : h("p", { class: "muted small" }, "Read-only: reviews (p, f, n) are made on the page `evaltape view RUN` serves."),
        h("p", { class: "muted small" }, "Written by evaltape view: plain HTML and JavaScript, nothing loaded from the network.")));
    document.body.appendChild(box);
  }
  document.addEventListener("keydown", function (ev) {
    var t = ev.target;
    var typing = t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA");
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (typing) {
      if (ev.key === "Escape") { t.blur(); ev.preventDefault(); }
      else if (ev.key === "Enter" && t.id === "search" && listState) { t.blur(); listState.move(1); ev.preventDefault(); }
      return;
    }
    var helpBox = document.getElementById("help");
    if (helpBox && (ev.key === "Escape" || ev.key === "?")) { helpBox.remove(); ev.preventDefault(); return; }
    var k = ev.key;
    var view = current.view;
    var done = true;
    if (k === "?") help();
    else if (k === "1") go("overview/" + current.r);
    else if (k === "2") go("episodes/" + current.r);
    else if (k === "3" && META.compare) go("compare");
    else if (k === "/") {
      if (view !== "episodes") { go("episodes/" + current.r); setTimeout(function () { var s = document.getElementById("search"); if (s) s.focus(); }, 50); }
      else if (listState) listState.search.focus();
    } else if (view === "episodes" && listState) {
      if (k === "j" || k === "ArrowDown") listState.move(1);
      else if (k === "k" || k === "ArrowUp") listState.move(-1);
      else if (k === "Enter" || k === "o") listState.openSel();
      else if (k === "ArrowRight" || k === "ArrowLeft") {
        var row = listState.rows.filter(function (r) { return r.el.classList.contains("sel"); })[0];
        if (row) listState.toggle(row.c, k === "ArrowRight");
      } else if (k === "]") listState.page(1);
      else if (k === "[") listState.page(-1);
      else done = false;
    } else if (view === "episode" && current.nav) {
      var nav = current.nav;
      if ((k === "j" || k === "ArrowRight") && nav.next !== null) openEpisode(nav.run, nav.next, nav.params);
      else if ((k === "k" || k === "ArrowLeft") && nav.prev !== null) openEpisode(nav.run, nav.prev, nav.params);
      else if (k === "Escape" || k === "u") go(nav.back);
      else if (k === "p" && current.review) current.review.pass();
      else if (k === "f" && current.review) current.review.fail();
      else if (k === "n" && current.review) current.review.note();
      else done = false;
    } else done = false;
    if (done) ev.preventDefault();
  });

  if (!location.hash) history.replaceState(null, "", "#overview/" + LAST);
  render();
})();
