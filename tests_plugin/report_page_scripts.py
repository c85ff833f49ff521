"""The JavaScript the report's browser tests run in the page (test_report_browser.py): the probe script appended to
a copy of the page, which filters, searches, expands and collapses and writes what it saw into the DOM, and the
expressions evaluated in a tab to wait for the page, read the probe's findings and set up each screenshot's view.

Split out of test_report_browser.py on 2026-12-07 to keep modules under 500 lines."""

PROBE = r"""
<script>
window.anatomyReady.then(function () {  // the page's script runs once it has opened its embedded ledger
  "use strict";
  var out = {ran: !document.getElementById("controls").hidden};
  function visible(sel) { return Array.prototype.filter.call(document.querySelectorAll(sel), function (d) { return !d.hidden; }); }
  var all = document.querySelectorAll("details.rec").length;
  var agree = document.querySelector('input[data-verdict-filter][value="agree"]');
  agree.checked = false; agree.dispatchEvent(new Event("change"));
  out.without_agree = {rows: visible("details.rec").length, agree_rows: visible('details.rec[data-verdict="agree"]').length};
  agree.checked = true; agree.dispatchEvent(new Event("change"));
  var search = document.getElementById("rec-search");
  search.value = "decode_step"; search.dispatchEvent(new Event("input"));
  out.search = {rows: visible("details.rec").length,
                matching: visible("details.rec").every(function (d) { return d.getAttribute("data-search").indexOf("decode_step") >= 0; })};
  search.value = "tests_capacity/test_capacity_ledger.py::"; search.dispatchEvent(new Event("input"));
  out.search_test_id = visible("details.rec").map(function (d) { return +d.getAttribute("data-i"); });
  search.value = ""; search.dispatchEvent(new Event("input"));
  out.rows = {all: all, visible_after_reset: visible("details.rec").length};
  var marks = document.querySelectorAll("svg [data-rec]"), step = Math.max(1, Math.floor(marks.length / 60));
  out.point_tips = Array.prototype.filter.call(marks, function (m, k) { return k % step === 0; }).map(function (m) {
    return [+m.getAttribute("data-rec"), m.getAttribute("data-what"), (m.querySelector("title") || {}).textContent || null];
  });
  out.finding_reasons = Array.prototype.map.call(document.querySelectorAll("#findings article.finding"), function (a) {
    return [(a.querySelector("code.fid") || {}).textContent || null, a.querySelector("header + p").textContent]; });
  document.getElementById("expand-all").click();
  setTimeout(function () {
    var open = document.querySelectorAll("details.rec[open]").length;
    var drawn = document.querySelectorAll("details.rec[open] .derivation:not([hidden]) h4").length / 3;
    out.expanded = {open: open, drawn: drawn};
    // 400 rows spread over the page (every k-th), not its first 400: the order of the rows follows the suites' run
    // order, and a run whose first suites carry few findings would check few finding notes
    var recs = document.querySelectorAll("details.rec"), stride = Math.max(1, Math.ceil(recs.length / 400));
    out.derivations = Array.prototype.filter.call(recs, function (d, k) { return k % stride === 0; }).map(function (d) {
      return {i: +d.getAttribute("data-i"),
              terms: Array.prototype.map.call(d.querySelectorAll("table.terms tr"), function (tr) {
                return Array.prototype.map.call(tr.children, function (c) { return c.textContent; }); }).slice(1),
              inputs: Array.prototype.map.call(d.querySelectorAll(".derivation .col:first-child table.kv tr"), function (tr) {
                return [tr.children[0].textContent, tr.children[1].textContent]; }),
              gap: (Array.prototype.filter.call(d.querySelectorAll("table.kv tr"), function (tr) {
                return tr.children[0].textContent === "gap"; })[0] || {children: [0, {textContent: null}]}).children[1].textContent,
              prov: Array.prototype.map.call(d.querySelectorAll("table.prov tr"), function (tr) {
                return [tr.children[0].textContent, tr.children[1].textContent]; }),
              texts: {formula: (d.querySelector("pre.formula") || {}).textContent || null,
                      notes: Array.prototype.map.call(d.querySelectorAll("ul.notes li"), function (li) { return li.textContent; }),
                      term_notes: Array.prototype.map.call(d.querySelectorAll("table.terms tr"), function (tr) {
                        return tr.children[3].textContent; }).slice(1),
                      why: (d.querySelector("p.why") || {}).textContent || null,
                      finding: (d.querySelector("p.finding-note") || {}).textContent || null,
                      test_id: (d.querySelector("p.testid") || {}).textContent || null}};
    });
    out.budgets = Array.prototype.filter.call(document.querySelectorAll("details.rec"), function (d) {
      return d.querySelector("table.budget"); }).map(function (d) {
      return {i: +d.getAttribute("data-i"), rows: Array.prototype.map.call(d.querySelectorAll("table.budget tr"),
        function (tr) { return [tr.children[0].textContent, tr.children[1].textContent]; })}; });
    document.getElementById("collapse-all").click();
    out.collapsed_open = document.querySelectorAll("details.rec[open]").length;
    out.plots = Array.prototype.map.call(document.querySelectorAll("svg.plot"), function (svg) {
      return {label: svg.getAttribute("aria-label"),
              ticks: Array.prototype.map.call(svg.querySelectorAll("text.tick"), function (t) {
                var b = t.getBBox(), m = t.getCTM();  // the label's own box, and how it is turned and placed
                return [t.textContent, b.x, b.y, b.width, b.height, m.a, m.b, m.c, m.d, m.e, m.f]; })};
    });
    var pre = document.createElement("pre");
    pre.id = "browser-check";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }, 200);
});
</script>
"""

# The page is ready once its script has opened the embedded ledger (or failed to: the page then says so)
READY = "Promise.resolve(window.anatomyReady).then(function () { return true; }, function () { return false; })"
# The probe's findings (the text of the element it appends), once it has written them; null after two minutes
PROBE_RESULT = """new Promise(function (done) {
  var since = Date.now();
  (function wait() {
    var found = document.getElementById("browser-check");
    if (found) { done(found.textContent); } else if (Date.now() - since > 120000) { done(null); } else { setTimeout(wait, 100); }
  })();
})"""
# One SECTIONS view of the loaded page: its style (one part, scrolled by a negative margin: the shot shows the top of
# the page) in place of the last view's, and its fragment, which scrolls to its row and has the page's hashchange
# handler open it; resolved once the layout settled and an opened row's derivation is drawn and its marker turned
# (a 0.1 s transition)
VIEW = """(function (css, fragment) {
  var style = document.getElementById("screenshot-view");
  if (!style) { style = document.createElement("style"); style.id = "screenshot-view"; document.head.appendChild(style); }
  style.textContent = css;
  window.scrollTo(0, 0);
  if (fragment) { location.hash = fragment; }
  return new Promise(function (done) {
    setTimeout(function () { requestAnimationFrame(function () { done(true); }); }, fragment ? 300 : 50);
  });
})(%s, %s)"""
