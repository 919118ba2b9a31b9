// Reading page: zoom and pan on every image (the shared viewer), by
// mouse and by keyboard (a focused viewer: arrow keys pan, + − zoom, 0
// fits); thumbnails of earlier questions' images open in the reference
// viewer; one submission per answer (the button is disabled once the form
// is sent), and an empty choice says why it was not sent. The page is
// marked data-ready on <html> once all of this is wired.
(function () {
  "use strict";
  var STEP = 60; // pixels per arrow key
  function wire(fig) {
    var vp = fig.querySelector(".viewport");
    var z = window.chexZoom(vp);
    if (!z) return null;
    var bs = fig.querySelectorAll("[data-zoom]");
    for (var j = 0; j < bs.length; j++) {
      (function (b) {
        b.addEventListener("click", function () {
          if (b.dataset.zoom === "in") z.zoomIn(); else if (b.dataset.zoom === "out") z.zoomOut(); else z.fit();
        });
      })(bs[j]);
    }
    vp.addEventListener("keydown", function (e) {
      var k = e.key, done = true;
      if (k === "ArrowLeft") z.pan(STEP, 0);
      else if (k === "ArrowRight") z.pan(-STEP, 0);
      else if (k === "ArrowUp") z.pan(0, STEP);
      else if (k === "ArrowDown") z.pan(0, -STEP);
      else if (k === "+" || k === "=") z.zoomIn();
      else if (k === "-" || k === "−") z.zoomOut();
      else if (k === "0") z.fit();
      else done = false;
      if (done) e.preventDefault();
    });
    return z;
  }
  var figs = document.querySelectorAll(".figure");
  var refZoom = null;
  for (var i = 0; i < figs.length; i++) {
    var z = figs[i].hidden ? null : wire(figs[i]);
    if (figs[i].id === "ref") refZoom = z;
  }
  // Thumbnails: show the chosen earlier image in the reference viewer.
  var ref = document.getElementById("ref");
  var thumbs = document.querySelectorAll(".thumb[data-src]");
  for (var t = 0; t < thumbs.length; t++) {
    (function (b) {
      b.addEventListener("click", function () {
        if (!ref) return;
        var img = document.getElementById("ref-img");
        img.src = b.dataset.src;
        img.alt = b.dataset.alt;
        document.getElementById("ref-label").textContent = b.dataset.label;
        var named = ref.querySelectorAll("[data-zoom]");
        for (var n = 0; n < named.length; n++) {
          var what = named[n].dataset.zoom === "in" ? "Zoom in on " : named[n].dataset.zoom === "out" ? "Zoom out of " : "Fit ";
          named[n].setAttribute("aria-label", what + b.dataset.label + (named[n].dataset.zoom === "fit" ? " to the viewer" : ""));
        }
        ref.querySelector(".viewport").setAttribute("aria-label", "Viewer of " + b.dataset.label + ": arrow keys pan, + and − zoom, 0 fits");
        ref.hidden = false;
        if (!refZoom) refZoom = wire(ref); else refZoom.fit();
        for (var o = 0; o < thumbs.length; o++) thumbs[o].setAttribute("aria-pressed", thumbs[o] === b ? "true" : "false");
        ref.scrollIntoView({ block: "nearest" });
      });
    })(thumbs[t]);
  }
  var form = document.getElementById("answer-form");
  if (form) {
    var msg = document.getElementById("choose");
    form.addEventListener("change", function () { if (msg) msg.textContent = ""; });
    form.addEventListener("submit", function (e) {
      if (!form.querySelector("input[name=option]:checked")) {
        e.preventDefault();
        if (msg) msg.textContent = "Nothing was sent: choose at least one option, then submit.";
        return;
      }
      var b = document.getElementById("submit");
      setTimeout(function () { b.disabled = true; }, 0);
    });
  }
  // Scripts and tests wait for this mark before they use the controls.
  document.documentElement.setAttribute("data-ready", "");
})();
