// krm-catalog website: optional improvements. Every page works without this file; it adds copy
// buttons, search as you type and a version selector that applies itself. It only ever talks to
// the origin it was served from.
(function () {
  "use strict";

  // ------------------------------------------------------------------ copy buttons

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // Older browsers, or a page served over plain HTTP from a name other than localhost.
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "visually-hidden";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      document.body.removeChild(area);
      if (ok) { resolve(); } else { reject(new Error("copy failed")); }
    });
  }

  function setupCopyButtons(root) {
    var buttons = root.querySelectorAll("button[data-copy]");
    Array.prototype.forEach.call(buttons, function (button) {
      var target = document.getElementById(button.getAttribute("data-copy"));
      if (!target) { return; }
      button.hidden = false;
      var label = button.firstChild.nodeValue;
      button.addEventListener("click", function () {
        copyText(target.textContent).then(function () {
          button.firstChild.nodeValue = "Copied";
          button.classList.add("copied");
          announce("Copied to the clipboard");
          window.setTimeout(function () {
            button.firstChild.nodeValue = label;
            button.classList.remove("copied");
          }, 2000);
        }, function () {
          announce("Copying failed: select the text and copy it yourself");
        });
      });
    });
  }

  // One polite live region for short messages, so screen readers hear what happened.
  var status;
  function announce(message) {
    if (!status) {
      status = document.createElement("p");
      status.className = "visually-hidden";
      status.setAttribute("role", "status");
      document.body.appendChild(status);
    }
    status.textContent = "";
    window.setTimeout(function () { status.textContent = message; }, 50);
  }

  // ------------------------------------------------------------------ search as you type

  function setupLiveSearch() {
    var form = document.getElementById("search-form");
    var input = form && form.querySelector("[data-live-search]");
    var results = document.getElementById("results");
    if (!input || !results || !window.fetch || !window.DOMParser || !window.history.replaceState) { return; }
    var timer = 0;
    var controller = null;
    var last = input.value;

    function urlFor() {
      var params = new URLSearchParams();
      Array.prototype.forEach.call(form.elements, function (el) {
        if (!el.name || el.disabled) { return; }
        if (el.name === "q" && !el.value.trim()) { return; }
        params.append(el.name, el.value.trim());
      });
      var query = params.toString();
      return "/" + (query ? "?" + query : "");
    }

    function run() {
      if (input.value === last) { return; }
      last = input.value;
      var url = urlFor();
      if (controller) { controller.abort(); }
      controller = window.AbortController ? new AbortController() : null;
      fetch(url, { headers: { "Accept": "text/html" }, credentials: "same-origin", signal: controller ? controller.signal : undefined })
        .then(function (response) { return response.ok ? response.text() : Promise.reject(new Error(String(response.status))); })
        .then(function (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          var fresh = doc.getElementById("results");
          if (!fresh) { return; }
          results.replaceWith(document.importNode(fresh, true));
          results = document.getElementById("results");
          document.title = doc.title;
          window.history.replaceState(null, "", url);
          var heading = results.querySelector("[data-result-count]");
          var live = document.getElementById("search-status");
          if (heading && live) { live.textContent = heading.textContent; }
        })
        .catch(function () { /* a newer search replaced this one, or the network failed: the form still works */ });
    }

    input.addEventListener("input", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(run, 250);
    });
    form.addEventListener("submit", function () { window.clearTimeout(timer); });
  }

  // ------------------------------------------------------------------ version selector

  function setupAutosubmit() {
    var selects = document.querySelectorAll("select[data-autosubmit]");
    Array.prototype.forEach.call(selects, function (select) {
      var button = select.form && select.form.querySelector("[data-autosubmit-button]");
      if (button) { button.hidden = true; }
      select.addEventListener("change", function () { select.form.submit(); });
    });
  }

  function start() {
    setupCopyButtons(document);
    setupLiveSearch();
    setupAutosubmit();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
