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

  // The file picker of media inputs (files.go) lives inside the action's
  // form: its own inputs must not re-evaluate the form (which would
  // re-render the picker away) nor submit it. They ask for their own
  // fragments instead: a search as one types, an upload once a file is
  // chosen.
  function inPicker(t) {
    return t && t.closest && t.closest(".files");
  }
  function pickerInput(e) {
    var t = e.target;
    if (!inPicker(t)) {
      return;
    }
    e.stopPropagation();
    if (e.type === "change" && t.hasAttribute("data-media-upload") && t.files.length) {
      htmx.trigger(t, "media-upload");
    } else if (e.type === "input" && t.type === "search") {
      htmx.trigger(t, "files-search");
    }
  }
  document.addEventListener("input", pickerInput, true);
  document.addEventListener("change", pickerInput, true);
  document.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && inPicker(e.target) && e.target.type === "search") {
      e.preventDefault();
      htmx.trigger(e.target, "files-search");
    }
    // A reference picker's search is part of the form's live evaluation:
    // Enter in it searches (as typing does), it does not run the action.
    if (e.key === "Enter" && e.target.closest && e.target.closest(".picker") && e.target.type === "search") {
      e.preventDefault();
    }
  });

  // Choosing a file (or uploading one) fills the field with its webdav:
  // reference; the form's live evaluation then checks it and previews it.
  function fill(fieldID, ref) {
    var el = document.getElementById(fieldID);
    if (!el) {
      return;
    }
    el.value = ref;
    el.focus();
    el.dispatchEvent(new Event("input", { bubbles: true }));
  }
  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("[data-media-pick]");
    if (b) {
      fill(b.getAttribute("data-media-field"), b.getAttribute("data-media-pick"));
    }
  });
  // A listing swapped in while one types in its search box keeps the box
  // focused with what was typed meanwhile (and asks again for that).
  var searching = null;
  document.addEventListener("htmx:beforeSwap", function (e) {
    var t = e.detail.target;
    var a = document.activeElement;
    searching = null;
    if (t && t.classList && t.classList.contains("files") && a && a.type === "search" && t.contains(a)) {
      searching = { id: a.id, value: a.value };
    }
  });
  document.addEventListener("htmx:afterSwap", function (e) {
    var t = e.detail.target;
    if (searching) {
      var s = searching;
      searching = null;
      var box = document.getElementById(s.id);
      if (box) {
        box.focus();
        if (box.value !== s.value) {
          box.value = s.value;
          htmx.trigger(box, "files-search");
        }
        box.setSelectionRange(box.value.length, box.value.length);
      }
    }
    var f = t && t.querySelector && t.querySelector("[data-media-fill]");
    if (f) {
      fill(f.getAttribute("data-media-field"), f.getAttribute("data-media-fill"));
    }
  });

  // htmx swaps only 2xx answers: a refused request (413 over the body
  // limit, 400 over another bound) would otherwise change nothing on the
  // page. Its message is shown in the page's alert region instead, and
  // cleared by the next answer that succeeds.
  document.addEventListener("htmx:responseError", function (e) {
    var box = document.getElementById("request-error");
    if (!box) {
      return;
    }
    var x = e.detail.xhr;
    var doc = new DOMParser().parseFromString(x.responseText || "", "text/html");
    var found = doc.querySelector(".error");
    var p = document.createElement("p");
    p.className = "error";
    p.setAttribute("role", "alert");
    p.textContent = found ? found.textContent : "The server answered " + x.status + ".";
    box.replaceChildren(p);
  });
  document.addEventListener("htmx:afterRequest", function (e) {
    var box = document.getElementById("request-error");
    if (box && e.detail.successful) {
      box.replaceChildren();
    }
  });

  // Choosing a target loads the action's page again; the user was in the
  // picker, so focus goes on to the form's first field rather than back
  // to the top of the page (eleven Tabs away).
  document.addEventListener("click", function (e) {
    if (e.target.closest && e.target.closest("#target-options a")) {
      sessionStorage.setItem("ontoflow-focus-form", "1");
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    if (sessionStorage.getItem("ontoflow-focus-form") !== "1") {
      return;
    }
    sessionStorage.removeItem("ontoflow-focus-form");
    var first = document.querySelector("#form-body input:not([type=hidden]):not([disabled]), #form-body select:not([disabled]), #form-body textarea:not([disabled])");
    if (first) {
      first.focus();
    }
  });
})();
