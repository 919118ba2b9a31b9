// Zoom and pan of a radiograph viewer, shared by the review and reading
// apps. A viewer is an element with class "viewport" holding one element
// with class "stage" (the 1024×1024 images, stacked); buttons with
// data-zoom="in", "out" or "fit" inside the viewer's container act on it.
// Wheel zooms at the pointer, dragging pans, +/−/0 act on the first
// viewer. window.chexZoom(viewport) sets one up and returns its controls.
(function () {
  "use strict";
  function setup(viewport) {
    var stage = viewport.querySelector(".stage");
    if (!stage || viewport.dataset.zoomReady) return null;
    viewport.dataset.zoomReady = "1";
    var scale = 1, tx = 0, ty = 0, fitScale = 1;
    function draw() {
      stage.style.transform = "translate(" + tx + "px," + ty + "px) scale(" + scale + ")";
    }
    function fit() {
      var w = viewport.clientWidth, h = viewport.clientHeight;
      fitScale = Math.min(w / 1024, h / 1024);
      scale = fitScale;
      tx = (w - 1024 * scale) / 2;
      ty = (h - 1024 * scale) / 2;
      draw();
    }
    function zoomAt(factor, cx, cy) {
      var ns = Math.max(fitScale * 0.5, Math.min(fitScale * 16, scale * factor));
      tx = cx - (cx - tx) * (ns / scale);
      ty = cy - (cy - ty) * (ns / scale);
      scale = ns;
      draw();
    }
    function zoomCentre(factor) { zoomAt(factor, viewport.clientWidth / 2, viewport.clientHeight / 2); }
    viewport.addEventListener("wheel", function (e) {
      e.preventDefault();
      var r = viewport.getBoundingClientRect();
      zoomAt(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    var drag = null;
    viewport.addEventListener("pointerdown", function (e) {
      drag = { x: e.clientX, y: e.clientY, tx: tx, ty: ty };
      viewport.setPointerCapture(e.pointerId);
      viewport.classList.add("dragging");
    });
    viewport.addEventListener("pointermove", function (e) {
      if (!drag) return;
      tx = drag.tx + e.clientX - drag.x;
      ty = drag.ty + e.clientY - drag.y;
      draw();
    });
    function endDrag() { drag = null; viewport.classList.remove("dragging"); }
    viewport.addEventListener("pointerup", endDrag);
    viewport.addEventListener("pointercancel", endDrag);
    window.addEventListener("resize", fit);
    fit();
    function pan(dx, dy) { tx += dx; ty += dy; draw(); }
    return { zoomIn: function () { zoomCentre(1.25); }, zoomOut: function () { zoomCentre(0.8); }, fit: fit, pan: pan };
  }
  window.chexZoom = setup;
})();
