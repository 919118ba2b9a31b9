// Reading page: zoom and pan on every image (the shared viewer), and one
// submission per answer (the button is disabled once the form is sent).
(function () {
  "use strict";
  var figs = document.querySelectorAll(".figure");
  for (var i = 0; i < figs.length; i++) {
    var z = window.chexZoom(figs[i].querySelector(".viewport"));
    if (!z) continue;
    var bs = figs[i].querySelectorAll("[data-zoom]");
    for (var j = 0; j < bs.length; j++) {
      (function (b, z) {
        b.addEventListener("click", function () {
          if (b.dataset.zoom === "in") z.zoomIn(); else if (b.dataset.zoom === "out") z.zoomOut(); else z.fit();
        });
      })(bs[j], z);
    }
  }
  var form = document.getElementById("answer-form");
  if (form) {
    form.addEventListener("submit", function (e) {
      if (!form.querySelector("input[name=option]:checked")) {
        e.preventDefault();
        return;
      }
      var b = document.getElementById("submit");
      setTimeout(function () { b.disabled = true; }, 0);
    });
  }
})();
