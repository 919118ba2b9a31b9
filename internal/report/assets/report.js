"use strict";
(function () {
  var IX = JSON.parse(document.getElementById("chx-index").textContent);
  var PAGE = 100;
  var N = IX.keys.length;
  var multiMode = IX.modes.length > 1;
  // Turn arrays in the data/c<C>.js sidecars: see turnFields in items.go.
  var F = {turn: 0, step: 1, status: 2, text: 3, raw: 4, parsed: 5, gt: 6, correct: 7, patched: 8, original: 9, fed: 10, rule: 11, skip: 12, reasoning: 13, jaccard: 14};

  var CHUNK = IX.chunk;
  var CHX = window.CHX = {cache: {}, waiting: {}};
  // A sidecar data/c<C>.js calls CHX.chunk(C, [details of items C·CHUNK …]).
  CHX.chunk = function (c, ds) {
    ds.forEach(function (d, k) { CHX.cache[c * CHUNK + k] = d; });
    var cbs = CHX.waiting[c] || [];
    delete CHX.waiting[c];
    cbs.forEach(function (f) { f(); });
  };
  function loadItem(i, cb) {
    if (CHX.cache[i]) { cb(CHX.cache[i]); return; }
    var c = Math.floor(i / CHUNK), w = CHX.waiting[c];
    var done = function () { cb(CHX.cache[i]); };
    if (w) { w.push(done); return; }
    CHX.waiting[c] = [done];
    var s = document.createElement("script");
    s.src = "data/c" + c + ".js";
    s.onerror = function () {
      delete CHX.waiting[c];
      view.hidden = false;
      view.textContent = "Could not load " + s.src + " (is the data folder next to index.html?)";
    };
    document.head.appendChild(s);
  }

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  function opt(sel, value, label) {
    var o = document.createElement("option");
    o.value = value; o.textContent = label; sel.appendChild(o);
  }
  function runLabel(r) { return multiMode ? r.name + " [" + r.mode + "]" : r.name; }

  // Applicable stages from path and lesion alone (format.md §5).
  function applicable(i) {
    var p = IX.paths[IX.path[i]], heart = IX.lesions[IX.lesion[i]] === "cardiomegaly";
    var a = 1;
    if (p !== "lesion_free") a |= 2;
    if (p === "revision_required") a |= 4;
    if (p !== "lesion_free" && !heart) a |= 8;
    return a;
  }
  function code(r, i) { return IX.runs[r].s.charCodeAt(i) - 63; }
  function marks(r, i) {
    var c = code(r, i), a = applicable(i);
    if (c & 32) return {text: "no record", depth: ""};
    if (c & 16) return {text: "error", depth: "0"};
    var s = "", depth = 0, chain = true;
    for (var k = 0; k < 4; k++) {
      if (!(a & (1 << k))) { s += "·"; continue; }
      var ok = (c & (1 << k)) !== 0;
      s += ok ? "✓" : "✗";
      if (chain && ok) depth++; else chain = false;
    }
    if (chain && IX.lesions[IX.lesion[i]] === "cardiomegaly" && IX.paths[IX.path[i]] !== "lesion_free") depth++;
    return {text: s, depth: String(depth)};
  }

  var fModel = $("f-model"), fB = $("f-model-b"), fLesion = $("f-lesion"), fPath = $("f-path"), fStage = $("f-stage"), fCorrect = $("f-correct");
  IX.runs.forEach(function (r, i) { opt(fModel, i, runLabel(r)); });
  // Open on a model under test: the first run that is not a baseline
  // policy, else the first that is not the oracle (it is right on every
  // item by construction, so its view shows nothing to learn).
  (function () {
    var pick = -1;
    IX.runs.forEach(function (r, i) { if (pick < 0 && r.name.indexOf("baseline_") !== 0) pick = i; });
    IX.runs.forEach(function (r, i) { if (pick < 0 && r.name !== "baseline_oracle") pick = i; });
    if (pick > 0) fModel.value = String(pick);
  })();
  opt(fB, -1, "(none)");
  IX.runs.forEach(function (r, i) { opt(fB, i, runLabel(r)); });
  opt(fLesion, -1, "all");
  IX.lesions.forEach(function (l, i) { opt(fLesion, i, l); });
  opt(fPath, -1, "all");
  IX.paths.forEach(function (p, i) { opt(fPath, i, p); });

  var matches = [], page = 0, view = $("item-view"), current = -1;
  // Item-health flags by item (flagged_items.csv; itemhealth.go).
  var flagsOf = {}, fFlag = $("f-flag");
  (IX.flags || []).forEach(function (f) { (flagsOf[f.i] = flagsOf[f.i] || []).push(f); });
  function flagText(i) {
    return (flagsOf[i] || []).map(function (f) { return f.turn + " " + f.reasons.join("+"); }).join(", ");
  }

  function filter() {
    var r = +fModel.value, les = +fLesion.value, pth = +fPath.value, st = +fStage.value, want = fCorrect.value;
    var flagged = fFlag.value === "flagged";
    matches = [];
    if (!IX.runs.length) return;
    for (var i = 0; i < N; i++) {
      if (flagged && !flagsOf[i]) continue;
      if (les >= 0 && IX.lesion[i] !== les) continue;
      if (pth >= 0 && IX.path[i] !== pth) continue;
      var a = applicable(i);
      if (st > 0 && !(a & (1 << (st - 1)))) continue;
      if (want !== "all") {
        var c = code(r, i), got;
        if (c & 32) got = "missing";
        else if (c & 16) got = "error";
        else {
          var need = st > 0 ? (1 << (st - 1)) : a;
          got = (c & need) === need ? "correct" : "incorrect";
        }
        if (got !== want) continue;
      }
      matches.push(i);
    }
  }

  function renderList() {
    var tb = $("item-list").tBodies[0], r = +fModel.value, b = +fB.value;
    var pages = Math.max(1, Math.ceil(matches.length / PAGE));
    if (page >= pages) page = pages - 1;
    var frag = document.createDocumentFragment();
    matches.slice(page * PAGE, page * PAGE + PAGE).forEach(function (i) {
      var tr = el("tr");
      tr.dataset.item = i;
      tr.tabIndex = 0; // Enter or Space opens the item
      if (i === current) tr.className = "sel";
      var m = marks(r, i);
      [String(i + 1), IX.keys[i], IX.lesions[IX.lesion[i]], IX.paths[IX.path[i]]].forEach(function (t) { tr.appendChild(el("td", null, t)); });
      if (flagsOf[i]) tr.cells[1].appendChild(el("span", "flag", "⚑ " + flagText(i)));
      tr.appendChild(el("td", "marks", m.text));
      tr.appendChild(el("td", null, m.depth));
      tr.appendChild(el("td", "marks", b >= 0 ? marks(b, i).text : ""));
      frag.appendChild(tr);
    });
    tb.textContent = "";
    tb.appendChild(frag);
    $("item-count").textContent = matches.length + " of " + N + " items";
    $("page").textContent = "page " + (page + 1) + " of " + pages;
    $("prev").disabled = page === 0;
    $("next").disabled = page >= pages - 1;
  }

  function update() { page = 0; filter(); renderList(); }
  [fModel, fLesion, fPath, fStage, fCorrect, fFlag].forEach(function (s) { s.addEventListener("change", update); });
  fB.addEventListener("change", function () { renderList(); if (current >= 0) openItem(current); });
  $("prev").addEventListener("click", function () { page--; renderList(); });
  $("next").addEventListener("click", function () { page++; renderList(); });
  $("item-list").addEventListener("click", function (e) {
    var tr = e.target.closest("tr");
    if (tr && tr.dataset.item != null) openItem(+tr.dataset.item);
  });
  $("item-list").addEventListener("keydown", function (e) {
    var tr = e.target.closest("tr");
    if (!tr || tr.dataset.item == null || (e.key !== "Enter" && e.key !== " ")) return;
    e.preventDefault();
    openItem(+tr.dataset.item);
  });

  // What the parse rules and oracle decision points mean
  // (docs/reference/protocol.md §4 and §7).
  var RULES = {
    A4: "an \u201cAnswer: N\u201d marker (the last one)", A5: "a \u201cfinal answer\u201d phrase", A6: "a reply made only of numbers",
    A7: "no answer marker, so the whole prose went on", B0: "an empty reply (read as -1)", B1: "an \u201canswer is N\u201d phrase",
    B2: "the last line made only of numbers", B3: "every number in the text (or -1 when there is none)",
    answer_marker: "an \u201cAnswer: N\u201d marker", boxed: "a \\boxed{N}",
    "fail:empty_response": "the reply was empty", "fail:no_marker": "no \u201cAnswer: N\u201d marker",
    "fail:out_of_range": "a number that is no option", "fail:multiple_for_single": "several numbers for a single-choice question"
  };
  function ruleText(rule) {
    if (rule.indexOf("/") > 0) {
      var ab = rule.split("/");
      return "reference parse: first layer " + ab[0] + " (" + (RULES[ab[0]] || "?") + "), second layer " + ab[1] + " (" + (RULES[ab[1]] || "?") + ")";
    }
    return "strict parse: " + (RULES[rule] || rule);
  }
  var POINTS = {
    D2: "before T2: was detection (T1) right?", D3: "before T3: was contour evaluation (T2) right?",
    D5: "before T5: were the expansion and contraction points (T3, T4) right?",
    D6: "before T6: was the mask judged right (T2 on revision-free items, the revision result T5 on revision-required ones)?"
  };
  function legend(rules, points) {
    var box = el("div", "legend"), dl = el("dl");
    box.appendChild(el("span", null, "How to read this item: "));
    box.appendChild(dl);
    var add = function (k, v, g) {
      var dt = el("dt");
      if (g) { var a = el("a", null, k); a.href = "#g-" + g; dt.appendChild(a); } else dt.textContent = k;
      dl.appendChild(dt); dl.appendChild(el("dd", null, v));
    };
    rules.forEach(function (r) { add("rule " + r, ruleText(r) + ".", "parse-rules"); });
    points.forEach(function (p) { add(p, "the oracle's check " + POINTS[p] + " When it fails, an explicit oracle tells the model the truth and an implicit one rewrites the earlier answer to the right one; inject or patch says which happened.", "decision-points"); });
    add("GT", "the ground truth, the right option number(s).");
    return box;
  }

  function fmtList(v) { return v == null ? "–" : Array.isArray(v) ? "[" + v.join(", ") + "]" : String(v); }

  function answerCell(d, run, turnId) {
    var td = el("td");
    if (!run) { td.appendChild(el("span", "skip", "no record")); return td; }
    var t = null;
    run.turns.forEach(function (x) { if (x[F.turn] === turnId) t = x; });
    if (!t) { td.appendChild(el("span", "skip", run.status === "error" ? "not reached (record error)" : "not on this record's path")); return td; }
    if (t[F.status] !== "asked") {
      td.appendChild(el("span", "skip", t[F.status] + (t[F.skip] ? ": " + t[F.skip] : "")));
      return td;
    }
    var raw = t[F.raw] == null ? "" : d.texts[t[F.raw]];
    td.appendChild(el("pre", "raw", raw === "" ? "(empty answer)" : raw));
    var ok = t[F.correct];
    var meta = el("div", "meta");
    meta.appendChild(el("span", ok ? "ok" : "bad", ok ? "✓ correct" : "✗ wrong"));
    meta.appendChild(document.createTextNode(" · parsed " + fmtList(t[F.parsed]) + " · GT " + fmtList(t[F.gt])));
    if (t[F.rule]) {
      var rs = el("span", null, " · rule " + t[F.rule]);
      rs.title = ruleText(t[F.rule]);
      meta.appendChild(rs);
    }
    if (t[F.jaccard] != null) meta.appendChild(document.createTextNode(" · Jaccard " + t[F.jaccard].toFixed(2)));
    td.appendChild(meta);
    if (t[F.patched]) {
      var p = el("div", "patch", "Oracle " + t[F.patched] + " rewrote this answer in the history to: ");
      p.appendChild(el("code", null, t[F.fed] != null ? d.texts[t[F.fed]] : ""));
      td.appendChild(p);
    }
    if (t[F.reasoning] != null) {
      var det = el("details");
      det.appendChild(el("summary", null, "reasoning"));
      det.appendChild(el("pre", null, d.texts[t[F.reasoning]]));
      td.appendChild(det);
    }
    return td;
  }

  function turnText(d, run, turnId) {
    if (!run) return null;
    var s = null;
    run.turns.forEach(function (x) { if (x[F.turn] === turnId && x[F.text] != null) s = d.texts[x[F.text]]; });
    return s;
  }

  // flagBox shows an item's flags: the reason, the ground truth, the
  // modal answer and what every run of the flag's oracle mode answered.
  function flagBox(i, d) {
    var box = el("div");
    box.id = "item-flags";
    box.appendChild(el("p", "note", "⚑ A flag means the runs' answers to this question suggest the item may be mislabeled rather than hard: unanimous_wrong, every run gives the same wrong answer; majority_wrong, most runs agree on one wrong answer; negative_discrimination, weaker runs are right where stronger ones are wrong; parse_failures, most answers cannot be read; answerable_without_image, most models answer it right even without the image (it measures no perception). A reviewer should look at it again."));
    flagsOf[i].forEach(function (f) {
      box.appendChild(el("p", null, "⚑ " + f.turn + " " + f.q + (multiMode ? " (oracle " + f.mode + ")" : "") + ": " + f.reasons.join(", ") +
        " — ground truth " + f.gt + ", models' modal answer " + (f.modal || "none parsed") + " (" + Math.round(100 * f.agree) + "% of " + f.runs + " runs)" +
        (f.readers_asked ? "; readers, not counted: " + (f.readers_modal || 0) + " of " + f.readers_asked + " gave the models' modal answer, " + (f.readers_gt || 0) + " the ground truth" : "")));
      var tbl = el("table", "data"), tb = el("tbody"), readers = f.readers || [];
      IX.runs.forEach(function (r, k) {
        var rd = d.runs[k], t = null, reader = readers.indexOf(r.name) >= 0;
        if (r.mode !== f.mode || (f.from.indexOf(r.name) < 0 && !reader) || !rd) return;
        rd.turns.forEach(function (x) { if (x[F.turn] === f.turn) t = x; });
        if (!t || t[F.status] !== "asked") return;
        var tr = el("tr");
        tr.appendChild(el("th", null, runLabel(r) + (reader ? " (reader, not counted)" : "")));
        tr.appendChild(el("td", null, fmtList(t[F.parsed])));
        tr.appendChild(el("td", t[F.correct] ? "ok" : "bad", t[F.correct] ? "✓" : "✗"));
        tb.appendChild(tr);
      });
      tbl.appendChild(tb);
      box.appendChild(wrap(tbl));
    });
    return box;
  }

  function render(i, d) {
    var a = +fModel.value, b = +fB.value;
    var runs = [a];
    if (b >= 0 && b !== a) runs.push(b);
    view.hidden = false;
    view.textContent = "";
    var h = el("h3", null, IX.keys[i] + " — " + IX.lesions[IX.lesion[i]] + ", " + IX.paths[IX.path[i]]);
    view.appendChild(h);
    if (flagsOf[i]) view.appendChild(flagBox(i, d));
    runs.forEach(function (r) {
      var rd = d.runs[r];
      var p = el("p", "events", runLabel(IX.runs[r]) + ": " + (rd ? rd.status + (rd.error ? " (" + rd.error + ")" : "") + (rd.events.length ? " · oracle " + rd.events.join("; ") : "") : "no record"));
      view.appendChild(p);
    });
    var tbl = el("table"), head = el("tr");
    head.appendChild(el("th", null, "Turn, question and images"));
    runs.forEach(function (r) { head.appendChild(el("th", null, runLabel(IX.runs[r]))); });
    var thead = el("thead"); thead.appendChild(head); tbl.appendChild(thead);
    var tb = el("tbody");
    var ids = [];
    runs.forEach(function (r) { var rd = d.runs[r]; if (rd) rd.turns.forEach(function (t) { if (ids.indexOf(t[F.turn]) < 0) ids.push(t[F.turn]); }); });
    ids.sort(function (x, y) { return +x.slice(1) - +y.slice(1); });
    ids.forEach(function (id) {
      var tr = el("tr"), q = el("td");
      var step = null;
      runs.forEach(function (r) { var rd = d.runs[r]; if (rd) rd.turns.forEach(function (t) { if (t[F.turn] === id) step = t[F.step]; }); });
      q.appendChild(el("strong", null, id + " " + (step || "")));
      var texts = [];
      runs.forEach(function (r) { var s = turnText(d, d.runs[r], id); if (s != null && texts.indexOf(s) < 0) texts.push(s); });
      texts.forEach(function (s, k) {
        if (texts.length > 1) q.appendChild(el("div", "meta", "as sent to " + runLabel(IX.runs[runs[k]]) + ":"));
        q.appendChild(el("pre", null, s));
      });
      var imgs = d.images[+id.slice(1) - 1];
      if (imgs && imgs.length) {
        var box = el("div", "imgs");
        imgs.forEach(function (p) {
          if (!IX.images) { box.appendChild(el("code", null, p)); return; }
          var url = IX.images + p.split("/").map(encodeURIComponent).join("/");
          var link = el("a"); link.href = url; link.target = "_blank";
          var img = el("img"); img.src = url; img.alt = p; img.title = p; img.loading = "eager";
          link.appendChild(img); box.appendChild(link);
        });
        q.appendChild(box);
      }
      tr.appendChild(q);
      runs.forEach(function (r) { tr.appendChild(answerCell(d, d.runs[r], id)); });
      tb.appendChild(tr);
    });
    tbl.appendChild(tb);
    view.appendChild(wrap(tbl));
    var rules = [], points = [];
    runs.forEach(function (r) {
      var rd = d.runs[r];
      if (!rd) return;
      rd.turns.forEach(function (t) { if (t[F.rule] && rules.indexOf(t[F.rule]) < 0) rules.push(t[F.rule]); });
      rd.events.forEach(function (e) { var p = String(e).slice(0, 2); if (POINTS[p] && points.indexOf(p) < 0) points.push(p); });
    });
    view.appendChild(legend(rules.sort(), points.sort()));
  }
  // wrap puts a table in its own horizontal scroll box.
  // It takes keyboard focus, so that the keys scroll it.
  function wrap(tbl) { var w = el("div", "table-wrap"); w.tabIndex = 0; w.appendChild(tbl); return w; }

  function openItem(i) {
    current = i;
    Array.prototype.forEach.call($("item-list").tBodies[0].rows, function (tr) { tr.className = +tr.dataset.item === i ? "sel" : ""; });
    loadItem(i, function (d) {
      if (current !== i) return;
      render(i, d);
      // Answer texts scroll inside their box: the keys scroll them too.
      Array.prototype.forEach.call(view.querySelectorAll("pre"), function (p) { p.tabIndex = 0; });
      view.scrollIntoView({block: "nearest"});
    });
  }
  CHX.open = openItem;

  update();
  document.body.dataset.readyMs = String(Math.round(performance.now()));
  document.body.dataset.ready = "1";
})();
