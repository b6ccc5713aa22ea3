// Ontoflow console: keeps the user's own state across the live re-renders
// of an action's form. The server renders the form from what was posted;
// this file only carries over what changed in the browser meanwhile (a
// key typed while the evaluation was in flight, a collapsed section). It
// evaluates nothing: the server stays the single evaluator of the form.
(function () {
  "use strict";
  var kept = null;

  document.addEventListener("htmx:beforeSwap", function (e) {
    var target = e.detail.target;
    if (!target || target.id !== "form-body") {
      return;
    }
    var closed = [];
    target.querySelectorAll("details.section").forEach(function (d) {
      if (!d.open) {
        closed.push(d.id);
      }
    });
    var a = document.activeElement;
    var focus = null;
    if (a && a.id && target.contains(a) && a.type !== "checkbox" && "value" in a) {
      focus = { id: a.id, value: a.value };
    }
    kept = { closed: closed, focus: focus };
  });

  document.addEventListener("htmx:afterSwap", function (e) {
    if (!kept || !e.detail.target || e.detail.target.id !== "form-body") {
      return;
    }
    var k = kept;
    kept = null;
    k.closed.forEach(function (id) {
      var d = document.getElementById(id);
      if (d) {
        d.open = false;
      }
    });
    if (!k.focus) {
      return;
    }
    var el = document.getElementById(k.focus.id);
    if (el && el.value !== k.focus.value) {
      // Typed after the form was posted: keep it and ask the server again.
      el.value = k.focus.value;
      el.dispatchEvent(new Event("input", { bubbles: true }));
    }
  });

  // After Run or Preview, focus moves to what happened (the result's first
  // alert or heading), so a keyboard or screen-reader user lands on the
  // outcome instead of <body>; the region is aria-live, so it is read out.
  document.addEventListener("htmx:afterSettle", function (e) {
    var t = e.detail.target;
    if (!t || t.id !== "result") {
      return;
    }
    var el = t.querySelector("[role=alert], h2, p");
    if (!el) {
      return;
    }
    if (!el.hasAttribute("tabindex")) {
      el.setAttribute("tabindex", "-1");
    }
    el.focus();
  });
})();
