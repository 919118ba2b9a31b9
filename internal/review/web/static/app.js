// Case view: overlay controls, zoom and pan, decisions with keyboard
// shortcuts. Plain JavaScript, no dependencies; loaded on every page and
// active only where its elements exist.
(function () {
  "use strict";
  var root = document.getElementById("case");
  if (!root) return;

  var key = root.dataset.key;
  var csrf = root.dataset.csrf;
  var admin = root.dataset.admin === "true";
  var viewport = document.getElementById("viewport");
  var cxr = document.getElementById("cxr");
  var maskImg = document.getElementById("mask");
  var contourImg = document.getElementById("contour");
  var overlayToggle = document.getElementById("overlay-toggle");
  var contourToggle = document.getElementById("contour-toggle");
  var opacity = document.getElementById("opacity");
  var note = document.getElementById("note");
  var status = document.getElementById("status");

  // ---- overlay ------------------------------------------------------
  function applyOverlay() {
    if (!maskImg) return;
    var on = overlayToggle.checked;
    var contour = contourToggle.checked;
    var a = String(opacity.value / 100);
    maskImg.classList.toggle("hidden", !on || contour);
    contourImg.classList.toggle("hidden", !on || !contour);
    maskImg.style.opacity = a;
    contourImg.style.opacity = contour ? "1" : a;
  }
  if (maskImg) {
    overlayToggle.addEventListener("change", applyOverlay);
    contourToggle.addEventListener("change", applyOverlay);
    opacity.addEventListener("input", applyOverlay);
    applyOverlay();
  }

  // ---- zoom and pan (shared: /static/common/zoom.js) ----------------
  var zoom = window.chexZoom(viewport);
  function zoomCentre(f) { if (f > 1) zoom.zoomIn(); else zoom.zoomOut(); }
  function fit() { zoom.fit(); }
  document.getElementById("zoom-in").addEventListener("click", function () { zoomCentre(1.25); });
  document.getElementById("zoom-out").addEventListener("click", function () { zoomCentre(0.8); });
  document.getElementById("zoom-reset").addEventListener("click", fit);

  // ---- decisions ----------------------------------------------------
  var buttons = document.querySelectorAll("[data-decision]");
  var locked = root.dataset.locked === "true";
  function show(decision) {
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].classList.toggle("chosen", buttons[i].dataset.decision === decision);
    }
  }
  function setStatus(text, err) {
    status.textContent = text;
    status.classList.toggle("err", !!err);
  }
  function decide(decision) {
    if (admin || !status) return;
    if (locked) { setStatus("The review is locked; decisions can no longer be changed.", true); return; }
    setStatus("Saving " + decision + "…");
    var body = new URLSearchParams();
    body.set("key", key);
    body.set("decision", decision);
    body.set("note", note ? note.value : "");
    fetch("/api/decision", {
      method: "POST",
      headers: { "X-CSRF-Token": csrf, "Content-Type": "application/x-www-form-urlencoded" },
      body: body.toString(),
      credentials: "same-origin"
    }).then(function (resp) {
      return resp.json().then(function (j) { return { ok: resp.ok, j: j }; });
    }).then(function (r) {
      if (!r.ok) { setStatus("Not saved: " + (r.j.error || "error"), true); return; }
      show(r.j.decision);
      status.dataset.decision = r.j.decision;
      setStatus("Saved: " + r.j.decision + " (" + r.j.time + ")");
    }).catch(function () {
      setStatus("Not saved: the server cannot be reached.", true);
    });
  }
  for (var i = 0; i < buttons.length; i++) {
    buttons[i].addEventListener("click", function (e) { decide(e.currentTarget.dataset.decision); });
  }

  // ---- keyboard -----------------------------------------------------
  function go(url) { if (url) window.location.href = url; }
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (t && (t.tagName === "TEXTAREA" || t.tagName === "INPUT" && t.type === "text")) {
      if (e.key === "Escape") t.blur();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    // A decision key is the one its button shows (data-shortcut): a/r/u, or
    // k/f/d/u in an item-health re-review.
    for (var i = 0; i < buttons.length; i++) {
      if (buttons[i].dataset.shortcut === e.key) {
        decide(buttons[i].dataset.decision);
        e.preventDefault();
        return;
      }
    }
    switch (e.key) {
      case "n": case "ArrowRight": go(root.dataset.next); break;
      case "p": case "ArrowLeft": go(root.dataset.prev); break;
      case "o": if (overlayToggle) { overlayToggle.checked = !overlayToggle.checked; applyOverlay(); } break;
      case "c": if (contourToggle) { contourToggle.checked = !contourToggle.checked; applyOverlay(); } break;
      case "+": case "=": zoomCentre(1.25); break;
      case "-": zoomCentre(0.8); break;
      case "0": fit(); break;
      default: return;
    }
    e.preventDefault();
  });
})();
