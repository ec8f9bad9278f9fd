// Ferry console: keeps a page up to date (it asks for its main region again
// with If-None-Match; 304 when nothing changed) and draws the overview's
// chart with uPlot. No inline script anywhere: the Content-Security-Policy
// allows this file and uPlot only.
(function () {
  "use strict";

  var main = document.getElementById("main");
  var charts = null;

  function setStatus(text) {
    var s = document.getElementById("live-status");
    if (s) { s.textContent = text; }
  }

  // A person typing in a form of the region keeps what they typed: the
  // refresh waits.
  function busy() {
    var el = document.activeElement;
    return el && main.contains(el) && /^(INPUT|SELECT|TEXTAREA|BUTTON|SUMMARY)$/.test(el.tagName);
  }

  function openDetails() {
    var open = [];
    main.querySelectorAll("details[open]").forEach(function (d, i) { open.push(i); });
    return open;
  }

  function live() {
    if (!main || !main.dataset.live) { return; }
    var every = parseInt(main.dataset.refresh, 10) * 1000;
    if (!(every > 0)) { return; }
    var etag = null;
    function tick() {
      if (document.hidden || busy()) { setTimeout(tick, every); return; }
      var headers = { "X-Console-Live": "1" };
      if (etag) { headers["If-None-Match"] = etag; }
      fetch(main.dataset.live, { headers: headers, credentials: "same-origin", cache: "no-store" }).then(function (resp) {
        var footer = resp.headers.get("X-Console-Footer");
        if (footer) { document.getElementById("footer-cost").textContent = footer; }
        if (resp.status === 304) { setStatus("up to date at " + new Date().toLocaleTimeString()); return null; }
        if (resp.status === 401) { setStatus("signed out: sign in again to go on updating"); return "stop"; }
        if (!resp.ok) { setStatus("the last update failed (" + resp.status + "); trying again"); return null; }
        etag = resp.headers.get("ETag");
        return resp.text().then(function (html) {
          var open = openDetails();
          var chart = document.getElementById("chart");
          main.innerHTML = html;
          if (chart) {
            var slot = document.getElementById("chart");
            if (slot) { slot.replaceWith(chart); }
          }
          main.querySelectorAll("details").forEach(function (d, i) { if (open.indexOf(i) >= 0) { d.open = true; } });
          setStatus("updated at " + new Date().toLocaleTimeString());
          return null;
        });
      }).then(function (stop) {
        if (stop !== "stop") { setTimeout(tick, every); }
      }).catch(function () {
        setStatus("the console cannot be reached; trying again");
        setTimeout(tick, every);
      });
    }
    setTimeout(tick, every);
  }

  function total(xs) {
    var t = 0;
    xs.forEach(function (v) { if (v !== null) { t += v; } });
    return t;
  }

  function draw(fig, data) {
    var width = Math.max(320, Math.min(1100, fig.clientWidth || 900));
    var xs = data.minutes;
    var rates = [xs, data.enqueued, data.delivered, data.failed, data.deferred];
    var backlog = [xs, data.backlog];
    var rateOpts = {
      title: "Actions per minute", width: width, height: 220,
      series: [{}, { label: "enqueued", stroke: "#0b57d0" }, { label: "delivered", stroke: "#1a6b32" },
        { label: "failed", stroke: "#a4161a" }, { label: "deferred", stroke: "#7a4b00" }],
      scales: { y: { range: function (u, min, max) { return [0, Math.max(1, max)]; } } }
    };
    var backlogOpts = {
      title: "Due backlog", width: width, height: 160,
      series: [{}, { label: "due", stroke: "#4a5260", spanGaps: true }],
      scales: { y: { range: function (u, min, max) { return [0, Math.max(1, max)]; } } }
    };
    if (!charts) {
      charts = [new uPlot(rateOpts, rates, fig.querySelector(".chart-rates")),
        new uPlot(backlogOpts, backlog, fig.querySelector(".chart-backlog"))];
    } else {
      charts[0].setData(rates);
      charts[1].setData(backlog);
    }
    var last = null;
    data.backlog.forEach(function (v) { if (v !== null) { last = v; } });
    fig.querySelector(".chart-summary").textContent = "In the last hour: " + total(data.enqueued) + " enqueued, " +
      total(data.delivered) + " delivered, " + total(data.failed) + " failed, " + total(data.deferred) +
      " deferred" + (last === null ? "; no backlog measured yet." : "; due backlog " + last + " at the last measure.");
  }

  function chart() {
    var fig = document.getElementById("chart");
    if (!fig || typeof uPlot === "undefined") { return; }
    var every = Math.max(10, parseInt((main && main.dataset.refresh) || "0", 10)) * 1000;
    function load() {
      fetch(fig.dataset.src, { credentials: "same-origin", cache: "no-store" }).then(function (resp) {
        if (!resp.ok) { throw new Error("metrics " + resp.status); }
        return resp.json();
      }).then(function (data) { draw(fig, data); }).catch(function () {
        fig.querySelector(".chart-summary").textContent = "The metrics could not be read.";
      });
    }
    load();
    if (main && main.dataset.live) { setInterval(function () { if (!document.hidden) { load(); } }, every); }
  }

  live();
  chart();
}());
